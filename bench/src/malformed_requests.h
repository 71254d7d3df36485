#pragma once
// Requests that a correct OpenAI-compatible server must refuse with a 4xx (never a 5xx, never a
// crash): broken JSON, nesting bombs, wrong types, out-of-range values, unsupported fields.
#include <string>
#include <vector>

namespace sandwich::bench {

struct MalformedRequest {
  std::string name;  // what is wrong, for the report
  std::string method, path, body;
};

std::vector<MalformedRequest> malformed_requests(const std::string& model);

}  // namespace sandwich::bench
