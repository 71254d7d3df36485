#include "request_fields.h"

#include <algorithm>
#include <sstream>

#include "api_error.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "number";
  }
}

std::string fmt(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

}  // namespace

std::optional<int64_t> as_int64(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return v.get<int64_t>();
}

const json* Fields::get(const char* k) const {
  if (std::find(read_.begin(), read_.end(), k) == read_.end()) read_.emplace_back(k);
  auto it = j_.find(k);
  return it == j_.end() || it->is_null() ? nullptr : &*it;
}

double Fields::number(const char* k, double def, double lo, double hi) const {
  const json* v = get(k);
  if (!v) return def;
  if (!v->is_number()) bad(std::string("'") + k + "' must be a number, not " + type_name(*v), k);
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi))
    bad(std::string("'") + k + "' must be between " + fmt(lo) + " and " + fmt(hi) + ", got " +
            fmt(d),
        k);
  return d;
}

int64_t Fields::integer(const char* k, int64_t def, int64_t lo, int64_t hi) const {
  const json* v = get(k);
  if (!v) return def;
  if (!v->is_number_integer())
    bad(std::string("'") + k + "' must be an integer, not " + type_name(*v), k);
  const auto d = as_int64(*v);
  if (!d || *d < lo || *d > hi)
    bad(std::string("'") + k + "' must be between " + std::to_string(lo) + " and " +
            std::to_string(hi) + ", got " + v->dump(),
        k);
  return *d;
}

bool Fields::boolean(const char* k, bool def) const {
  const json* v = get(k);
  if (!v) return def;
  if (!v->is_boolean()) bad(std::string("'") + k + "' must be a boolean, not " + type_name(*v), k);
  return v->get<bool>();
}

std::optional<std::string> Fields::string(const char* k) const {
  const json* v = get(k);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad(std::string("'") + k + "' must be a string, not " + type_name(*v), k);
  return v->get<std::string>();
}

const Fields& Fields::object(const char* k) const {
  for (const auto& o : objects_)
    if (o->name_ == k) return *o;
  const json* v = get(k);
  static const json empty = json::object();
  objects_.push_back(std::make_unique<Fields>(v && v->is_object() ? *v : empty));
  objects_.back()->name_ = k;
  return *objects_.back();
}

std::vector<std::string> Fields::unread() const {
  std::vector<std::string> out;
  if (!j_.is_object()) return out;
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (std::find(read_.begin(), read_.end(), it.key()) == read_.end()) out.push_back(it.key());
  for (const auto& o : objects_)
    for (const auto& k : o->unread()) out.push_back(o->name_ + "." + k);
  return out;
}

}  // namespace sandwich::server
