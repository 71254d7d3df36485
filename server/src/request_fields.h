#pragma once
// Typed, range-checked access to a request's JSON fields. A field of the wrong type or out of
// range is the client's error (ApiError 400 naming the field); absent or null fields keep their
// default.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sandwich::server {

class Fields {
 public:
  explicit Fields(const nlohmann::json& j) : j_(j) {}
  // The field, or nullptr when it is absent or null.
  const nlohmann::json* get(const char* k) const;
  double number(const char* k, double def, double lo, double hi) const;
  int64_t integer(const char* k, int64_t def, int64_t lo, int64_t hi) const;
  bool boolean(const char* k, bool def) const;
  std::optional<std::string> string(const char* k) const;

 private:
  const nlohmann::json& j_;
};

// A JSON integer as int64, or none when it is an unsigned one past INT64_MAX (get<int64_t> would
// wrap it to a negative number).
std::optional<int64_t> as_int64(const nlohmann::json& v);

}  // namespace sandwich::server
