#pragma once
// The runs of `sandwich-bench serve` against one endpoint: its prompts, the warm-up requests,
// then a run at each rate of the sweep or at each rate the goodput search probes. The runs go
// to the report, and the goodput found to the endpoint's report.
#include <cstddef>
#include <ostream>
#include <vector>

#include "bench/http_client.h"
#include "bench/progress.h"
#include "bench/serve.h"

namespace sandwich::bench {

// The salts of an endpoint's prompts: run r's prompt i is salted by first + per_run * r + i,
// the shared prefix by prefix (past every run's).
struct PromptSalts {
  int first = 0, per_run = 0, prefix = 0;
};

// prompt_lens: the requests' prompt lengths (rep.lengths'), then the warm-up requests'.
void run_endpoint(HttpClient& client, TerminalProgress& progress, ServeReport& rep, size_t endpoint,
                  const std::vector<int>& prompt_lens, const PromptSalts& salts, std::ostream& log);

}  // namespace sandwich::bench
