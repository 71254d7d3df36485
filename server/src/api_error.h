#pragma once
// An error answered to the client in OpenAI's shape: thrown anywhere while a request is handled,
// turned into the response by the service.
#include <string>
#include <utility>
#include <vector>

#include "server/http_server.h"

namespace sandwich::server {

struct ApiError {
  int status;
  std::string message, type, param, code;
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// The client's mistake (400), naming the request field at fault when there is one.
[[noreturn]] inline void bad(const std::string& message, const std::string& param = {}) {
  throw ApiError{400, message, "invalid_request_error", param, {}};
}

inline HttpResponse to_response(const ApiError& e) {
  HttpResponse r = json_error(e.status, e.message, e.type, e.param, e.code);
  r.headers = e.headers;
  return r;
}

}  // namespace sandwich::server
