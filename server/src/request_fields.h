#pragma once
// Typed, range-checked access to a request's JSON fields. A field of the wrong type or out of
// range is the client's error (ApiError 400 naming the field); absent or null fields keep their
// default. Every key asked for counts as known: the body's keys never asked for are the fields
// this server ignores (logged as vLLM does), so a parser that reads its fields through one
// Fields needs no list of the fields it knows.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  // The object at k (the caller has checked that it is one), read the same way: the keys it
  // never reads are this one's unread keys too, as "k.key". A value the parser takes whole (a
  // JSON schema) is read with get() instead, and its keys are never listed.
  const Fields& object(const char* k) const;
  // The object's keys no accessor above was asked for, sorted; then its objects' (object()).
  std::vector<std::string> unread() const;

 private:
  const nlohmann::json& j_;
  std::string name_;  // "k" for object(k); empty at the top
  // Asked-for keys; a parser reads a few dozen, so a vector beats a set.
  mutable std::vector<std::string> read_;
  mutable std::vector<std::unique_ptr<Fields>> objects_;
};

// A JSON integer as int64, or none when it is an unsigned one past INT64_MAX (get<int64_t> would
// wrap it to a negative number).
std::optional<int64_t> as_int64(const nlohmann::json& v);

}  // namespace sandwich::server
