#pragma once
// JSON bodies as the server writes them: compact, and invalid UTF-8 (token pieces may split a
// character) replaced instead of thrown.
#include <string>

#include <nlohmann/json.hpp>

#include "server/http_server.h"

namespace sandwich::server {

inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline HttpResponse json_response(const nlohmann::json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(j);
  return r;
}

}  // namespace sandwich::server
