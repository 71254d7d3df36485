#include "text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "text/jinja_budget.h"

namespace sandwich::engine::jinja {
namespace {

// Python's float repr: the shortest digits that read back, fixed notation for exponents in
// [-4, 16), scientific otherwise, always with a '.' or an exponent.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  const int exp = std::stoi(s.substr(e + 1));
  std::string mant = s.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
            digits.substr(static_cast<size_t>(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += ebuf;
  }
  return neg ? "-" + out : out;
}

std::string string_repr(const std::string& s) {
  check_bytes(add_bytes(s.size(), 2), "repr");
  const bool has_single = s.find('\'') != std::string::npos;
  const char q = has_single && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

void json_string(std::string& out, const std::string& s) {
  size_t escaped = 2;  // what it will take, checked before any of it is written
  for (unsigned char c : s)
    escaped +=
        c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f' ? 2
        : c < 0x20                                                                             ? 6
                                                                                               : 1;
  check_bytes(add_bytes(out.size(), escaped), "tojson");
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Values nest as deep as a template builds them (a loop can wrap a list in a list): printing and
// comparing stop at a depth no real value reaches, before the stack would.
constexpr int kMaxNesting = 256;

void check_nesting(int level) {
  if (level > kMaxNesting)
    throw ValueError("a value nests deeper than " + std::to_string(kMaxNesting) + " levels");
}

bool too_deep(const Value& v, int level) {
  if (level > kMaxNesting) return true;
  auto deeper = [&](const Value& e) {
    return (e.is_list() || e.is_dict()) && too_deep(e, level + 1);
  };
  // Each visit is work: a namespace set in a loop walks its whole value every time.
  if (v.is_list()) {
    charge_steps(static_cast<int64_t>(v.as_list().size()));
    for (const Value& e : v.as_list())
      if (deeper(e)) return true;
  }
  if (v.is_dict()) {
    charge_steps(static_cast<int64_t>(v.as_dict().items.size()));
    for (const auto& kv : v.as_dict().items)
      if (deeper(kv.second)) return true;
  }
  return false;
}

std::string repr(const Value& v, int level);
bool equal(const Value& a, const Value& b, int level);

void json_value(std::string& out, const Value& v, int indent, int level) {
  check_nesting(level);
  auto newline = [&](int lvl) {
    check_bytes(add_bytes(out.size(), 1 + static_cast<size_t>(indent) * lvl), "tojson");
    out += '\n';
    out.append(static_cast<size_t>(indent) * lvl, ' ');
  };
  if (v.is_undefined() || v.is_callable())
    throw ValueError("Object of type " + v.type_name() + " is not JSON serializable");
  if (v.is_none()) {
    append_checked(out, "null", "tojson");
  } else if (v.is_bool()) {
    append_checked(out, v.as_bool() ? "true" : "false", "tojson");
  } else if (v.is_int()) {
    append_checked(out, std::to_string(v.as_int()), "tojson");
  } else if (v.is_float()) {
    const double d = std::get<double>(v.v);
    append_checked(out,
                   std::isnan(d)   ? "NaN"
                   : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity")
                                   : float_repr(d),
                   "tojson");
  } else if (v.is_string()) {
    json_string(out, v.as_string());
  } else if (v.is_list()) {
    const List& l = v.as_list();
    if (l.empty()) {
      append_checked(out, "[]", "tojson");
      return;
    }
    append_checked(out, "[", "tojson");
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) append_checked(out, indent >= 0 ? "," : ", ", "tojson");
      if (indent >= 0) newline(level + 1);
      json_value(out, l[i], indent, level + 1);
    }
    if (indent >= 0) newline(level);
    append_checked(out, "]", "tojson");
  } else {
    const Dict& d = v.as_dict();
    if (d.items.empty()) {
      append_checked(out, "{}", "tojson");
      return;
    }
    append_checked(out, "{", "tojson");
    for (size_t i = 0; i < d.items.size(); ++i) {
      if (i) append_checked(out, indent >= 0 ? "," : ", ", "tojson");
      if (indent >= 0) newline(level + 1);
      json_string(out, d.items[i].first);
      append_checked(out, ": ", "tojson");
      json_value(out, d.items[i].second, indent, level + 1);
    }
    if (indent >= 0) newline(level);
    append_checked(out, "}", "tojson");
  }
}

std::string repr(const Value& v, int level) {
  check_nesting(level);
  if (v.is_undefined()) return {};
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_float()) return float_repr(std::get<double>(v.v));
  if (v.is_string()) return string_repr(v.as_string());
  if (v.is_list()) {
    std::string out = "[";
    for (size_t i = 0; i < v.as_list().size(); ++i) {
      if (i) append_checked(out, ", ", "repr");
      append_checked(out, repr(v.as_list()[i], level + 1), "repr");
    }
    return out + "]";
  }
  if (v.is_dict()) {
    const Dict& d = v.as_dict();
    std::string out = d.is_namespace ? "<Namespace {" : "{";
    for (size_t i = 0; i < d.items.size(); ++i) {
      if (i) append_checked(out, ", ", "repr");
      append_checked(out, string_repr(d.items[i].first) + ": ", "repr");
      append_checked(out, repr(d.items[i].second, level + 1), "repr");
    }
    return out + (d.is_namespace ? "}>" : "}");
  }
  return "<function " + v.as_callable().name + ">";
}

bool equal(const Value& a, const Value& b, int level) {
  check_nesting(level);
  charge_steps(1);
  const bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (an && bn) {
    auto num = [](const Value& x) {
      return x.is_bool() ? (x.as_bool() ? 1.0 : 0.0) : x.as_number();
    };
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return num(a) == num(b);
  }
  if (a.v.index() != b.v.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) {
    const List &x = a.as_list(), &y = b.as_list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!equal(x[i], y[i], level + 1)) return false;
    return true;
  }
  if (a.is_dict()) {
    const Dict &x = a.as_dict(), &y = b.as_dict();
    if (&x == &y) return true;
    if (x.is_namespace || y.is_namespace || x.items.size() != y.items.size()) return false;
    for (const auto& [k, val] : x.items) {
      const Value* o = y.find(k);
      if (!o || !equal(val, *o, level + 1)) return false;
    }
    return true;
  }
  return &a.as_callable() == &b.as_callable();
}

}  // namespace

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return std::get<double>(v) != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !as_list().empty();
  if (is_dict()) return as_dict().is_namespace || !as_dict().items.empty();
  return true;
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return "list";
  if (is_dict()) return as_dict().is_namespace ? "Namespace" : "dict";
  return "function";
}

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int level) {
  if (level > kMaxNesting)
    throw Error("the render context nests deeper than " + std::to_string(kMaxNesting) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return None{};
    case nlohmann::ordered_json::value_t::boolean:
      return j.get<bool>();
    case nlohmann::ordered_json::value_t::number_integer:
      return j.get<int64_t>();
    case nlohmann::ordered_json::value_t::number_unsigned:
      return static_cast<int64_t>(j.get<uint64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return j.get<double>();
    case nlohmann::ordered_json::value_t::string:
      return j.get<std::string>();
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(from_json_at(e, level + 1));
      return l;
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, e] : j.items()) d->items.emplace_back(k, from_json_at(e, level + 1));
      return d;
    }
    default:
      return Undefined{};
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 1);
}

std::string to_str(const Value& v) {
  if (v.is_undefined()) return {};
  if (v.is_string()) return v.as_string();
  return to_repr(v);
}

std::string to_repr(const Value& v) {
  return repr(v, 0);
}

std::string to_json(const Value& v, int indent) {
  std::string out;
  json_value(out, v, indent, 0);
  return out;
}

bool values_equal(const Value& a, const Value& b) {
  return equal(a, b, 0);
}

void check_nesting_of(const Value& v) {
  if (too_deep(v, 1))
    throw ValueError("a value nests deeper than " + std::to_string(kMaxNesting) + " levels");
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

size_t find_text(std::string_view hay, std::string_view needle, size_t from) {
  if (from > hay.size()) return std::string::npos;
  if (needle.empty()) return from;
  // glibc's memmem is the two-way algorithm: linear, whatever the strings. It is given windows
  // that double in size, overlapping by the needle less one, so that finding each of many
  // matches in turn costs the distance to the next, not the rest of the string (under ASan, which
  // checks the whole range it is handed, that would be quadratic).
  const size_t m = needle.size();
  size_t start = from, window = std::max<size_t>(4 * m, 256);
  while (hay.size() - start >= m) {
    const size_t len = std::min(window, hay.size() - start);
    if (const void* at = memmem(hay.data() + start, len, needle.data(), m))
      return static_cast<size_t>(static_cast<const char*>(at) - hay.data());
    if (start + len == hay.size()) break;
    start += len - (m - 1);
    window *= 2;
  }
  return std::string::npos;
}

size_t code_point_offset(std::string_view s, size_t i) {
  size_t seen = 0;
  for (size_t b = 0; b < s.size(); ++b)
    if ((static_cast<unsigned char>(s[b]) & 0xC0) != 0x80 && seen++ == i) return b;
  return s.size();
}

std::vector<size_t> code_points(const std::string& s) {
  std::vector<size_t> starts;
  starts.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  return starts;
}

}  // namespace sandwich::engine::jinja
