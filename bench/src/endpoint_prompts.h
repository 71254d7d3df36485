#pragma once
// The prompts of `sandwich-bench serve` for one endpoint (serve.cpp, endpoint_runs.cpp).
#include <ostream>
#include <vector>

#include "bench/http_client.h"
#include "bench/prompts.h"
#include "bench/serve.h"

namespace sandwich::bench {

// Prompts of the given lengths: exact under the endpoint's tokenizer when it has one, else
// approximate (the report says which, and why). With --shared-prefix-tokens each starts with
// the same prefix (salted by prefix_salt, so that it is new to the server in each invocation);
// prompt i is salted by salt0 + i.
std::vector<BuiltPrompt> build_prompts(HttpClient& client, const Endpoint& ep, EndpointReport& er,
                                       const ServeOptions& o, const std::vector<int>& lengths,
                                       int salt0, int prefix_salt, std::ostream& log);

}  // namespace sandwich::bench
