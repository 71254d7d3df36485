// Methods of strings, dicts and lists as Python has them, and the global functions.
#include <cctype>
#include <cstdio>
#include <ctime>

#include "text/jinja_budget.h"
#include "text/jinja_builtins.h"

namespace sandwich::engine::jinja {
namespace {

bool py_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// By value: callers pass temporaries as the fallback and keep the result.
Value arg(const CallArgs& a, size_t i, const char* name, const Value& fallback) {
  if (i < a.positional.size()) return a.positional[i];
  if (const Value* v = a.kw(name)) return *v;
  return fallback;
}

std::string string_arg(const CallArgs& a, size_t i, const char* name, const std::string& method) {
  static const Value none{None{}};
  const Value& v = arg(a, i, name, none);
  if (!v.is_string()) throw ValueError(method + "() needs a string argument, not " + v.type_name());
  return v.as_string();
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (alpha)
      c = static_cast<char>(prev_cased ? std::tolower(static_cast<unsigned char>(c))
                                       : std::toupper(static_cast<unsigned char>(c)));
    prev_cased = alpha;
  }
  return out;
}

// Checks each piece before adding it, then charges the whole list.
struct Pieces {
  List out;
  size_t bytes = sizeof(List);
  void push(std::string piece) {
    bytes = add_bytes(bytes, sizeof(Value) + piece.size());
    check_bytes(bytes, "split()");
    out.push_back(std::move(piece));
  }
  List done() {
    charge_bytes(bytes, "split()");
    return std::move(out);
  }
};

List split(const std::string& s, const std::string* sep, int64_t maxsplit) {
  Pieces out;
  if (!sep) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && py_space(s[e - 1])) --e;
        out.push(s.substr(i, e - i));
        break;
      }
      size_t e = i;
      while (e < s.size() && !py_space(s[e])) ++e;
      out.push(s.substr(i, e - i));
      i = e;
    }
    return out.done();
  }
  if (sep->empty()) throw ValueError("split(): empty separator");
  size_t b = 0;
  for (;;) {
    const size_t e = find_text(s, *sep, b);
    if (e == std::string::npos ||
        (maxsplit >= 0 && static_cast<int64_t>(out.out.size()) == maxsplit)) {
      out.push(s.substr(b));
      return out.done();
    }
    out.push(s.substr(b, e - b));
    b = e + sep->size();
  }
}

bool affix_matches(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) throw ValueError("startswith()/endswith() need a string or a list of them");
    const std::string& x = a.as_string();
    return x.size() <= s.size() && (prefix ? s.compare(0, x.size(), x) == 0
                                           : s.compare(s.size() - x.size(), x.size(), x) == 0);
  };
  if (affix.is_list()) {
    for (const Value& a : affix.as_list())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

std::optional<Value> string_method(const std::string& s, const std::string& m, const CallArgs& a) {
  static const Value none{None{}};
  if (m == "strip" || m == "lstrip" || m == "rstrip") {
    const Value& c = arg(a, 0, "chars", none);
    const std::string* chars = c.is_string() ? &c.as_string() : nullptr;
    return py_strip(s, chars, m != "rstrip", m != "lstrip");
  }
  if (m == "upper" || m == "lower") {
    std::string out = s;
    for (char& c : out)
      c = static_cast<char>(m == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                         : std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  if (m == "title") return title_case(s);
  if (m == "capitalize") {
    std::string out = s;
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
  }
  if (m == "startswith" || m == "endswith") {
    const Value& x = arg(a, 0, "prefix", none);
    return affix_matches(s, x, m == "startswith");
  }
  if (m == "split" || m == "rsplit") {
    const Value& sep = arg(a, 0, "sep", none);
    const Value& max = arg(a, 1, "maxsplit", Value(-1));
    if (!sep.is_none() && !sep.is_string()) throw ValueError("split() needs a string separator");
    if (!max.is_int()) throw ValueError("split() needs an integer maxsplit");
    if (m == "rsplit" && max.as_int() >= 0)
      throw ValueError("rsplit() with maxsplit is not supported");
    return split(s, sep.is_string() ? &sep.as_string() : nullptr, max.as_int());
  }
  if (m == "replace") {
    const std::string& from = string_arg(a, 0, "old", m);
    const std::string& to = string_arg(a, 1, "new", m);
    const Value& count = arg(a, 2, "count", Value(-1));
    const int64_t n = count.is_int() ? count.as_int() : -1;
    if (from.empty()) return s;
    // Measured first: the matches counted, the result's size checked, then built.
    int64_t matches = 0;
    const size_t grow = to.size() > from.size() ? to.size() - from.size() : 0;
    for (size_t at = find_text(s, from); matches != n && at != std::string::npos;
         at = find_text(s, from, at + from.size())) {
      ++matches;
      if (grow)
        check_bytes(add_bytes(s.size(), mul_bytes(static_cast<size_t>(matches), grow)),
                    "replace()");
    }
    const size_t k = static_cast<size_t>(matches);
    check_bytes(add_bytes(s.size() - k * from.size(), mul_bytes(k, to.size())), "replace()");
    std::string out;
    out.reserve(s.size() - k * from.size() + k * to.size());
    size_t b = 0;
    for (size_t i = 0; i < k; ++i) {
      const size_t e = find_text(s, from, b);
      out.append(s, b, e - b).append(to);
      b = e + from.size();
    }
    return out.append(s, b);
  }
  if (m == "find" || m == "count") {
    const std::string& x = string_arg(a, 0, "sub", m);
    if (m == "find") {
      const size_t at = find_text(s, x);
      return at == std::string::npos
                 ? int64_t{-1}
                 : static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, at)));
    }
    if (x.empty()) return static_cast<int64_t>(code_point_count(s) + 1);
    int64_t n = 0;
    for (size_t at = find_text(s, x); at != std::string::npos; at = find_text(s, x, at + x.size()))
      ++n;
    return n;
  }
  if (m == "removeprefix" || m == "removesuffix") {
    const std::string& x = string_arg(a, 0, "affix", m);
    if (!affix_matches(s, x, m == "removeprefix")) return s;
    return m == "removeprefix" ? s.substr(x.size()) : s.substr(0, s.size() - x.size());
  }
  if (m == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : iterate(arg(a, 0, "iterable", none))) {
      if (!first) append_checked(out, s, "join()");
      first = false;
      append_checked(out, v.is_string() ? v.as_string() : to_str(v), "join()");
    }
    return out;
  }
  if (m == "isdigit" || m == "isalpha" || m == "isspace" || m == "isalnum") {
    if (s.empty()) return false;
    for (unsigned char c : s) {
      const bool ok = m == "isdigit"   ? std::isdigit(c) != 0
                      : m == "isalpha" ? std::isalpha(c) != 0
                      : m == "isalnum" ? std::isalnum(c) != 0
                                       : py_space(static_cast<char>(c));
      if (!ok) return false;
    }
    return true;
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Dict& d, const std::string& m, const CallArgs& a) {
  static const Value none{None{}};
  if (m == "items" || m == "keys" || m == "values") {
    size_t bytes = sizeof(List);
    for (const auto& [k, v] : d.items)
      bytes = add_bytes(bytes, m == "keys"     ? sizeof(Value) + k.size()
                               : m == "values" ? value_bytes(v)
                                               : 2 * sizeof(Value) + sizeof(List) + 64 + k.size() +
                                                     value_bytes(v));
    charge_bytes(bytes, "items()");
    List out;
    out.reserve(d.items.size());
    for (const auto& [k, v] : d.items) {
      if (m == "items")
        out.push_back(List{k, v});
      else
        out.push_back(m == "keys" ? Value(k) : v);
    }
    return out;
  }
  if (m == "get") {
    const Value& k = arg(a, 0, "key", none);
    const Value* v = k.is_string() ? d.find(k.as_string()) : nullptr;
    return v ? *v : arg(a, 1, "default", none);
  }
  return std::nullopt;
}

Value callable(std::string name, std::function<Value(const CallArgs&)> f) {
  return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(f)}));
}

}  // namespace

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  auto strip_char = [&](char c) {
    return chars ? chars->find(c) != std::string::npos : py_space(c);
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && strip_char(s[b])) ++b;
  if (right)
    while (e > b && strip_char(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string py_format(const std::string& fmt, const List& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      append_checked(out, std::string_view(&fmt[i], 1), "'%' formatting");
      continue;
    }
    if (++i >= fmt.size()) throw ValueError("incomplete format");
    const char c = fmt[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) throw ValueError("not enough arguments for format string");
    const Value& a = args[next++];
    if (c == 's') {
      append_checked(out, a.is_string() ? a.as_string() : to_str(a), "'%' formatting");
    } else if (c == 'r') {
      append_checked(out, to_repr(a), "'%' formatting");
    } else if (c == 'd' || c == 'i') {
      if (!a.is_number() && !a.is_bool()) throw ValueError("%d format: a number is required");
      append_checked(out,
                     std::to_string(a.is_bool()  ? int64_t{a.as_bool()}
                                    : a.is_int() ? a.as_int()
                                                 : checked_to_int(a.as_number(), "%d formatting")),
                     "'%' formatting");
    } else if (c == 'f') {
      if (!a.is_number()) throw ValueError("%f format: a number is required");
      // %f of 1e308 takes 316 characters.
      char buf[512];
      std::snprintf(buf, sizeof buf, "%f", a.as_number());
      append_checked(out, buf, "'%' formatting");
    } else {
      throw ValueError(std::string("unsupported format character '") + c + "'");
    }
  }
  if (next < args.size()) throw ValueError("not all arguments converted during string formatting");
  return out;
}

List iterate(const Value& v) {
  if (v.is_list()) {
    charge_bytes(list_bytes(v.as_list()), "a copy of a list");
    return v.as_list();
  }
  if (v.is_undefined()) return {};
  if (v.is_dict()) {
    size_t bytes = sizeof(List);
    for (const auto& kv : v.as_dict().items)
      bytes = add_bytes(bytes, sizeof(Value) + kv.first.size());
    charge_bytes(bytes, "a dict's keys");
    List keys;
    keys.reserve(v.as_dict().items.size());
    for (const auto& kv : v.as_dict().items) keys.push_back(kv.first);
    return keys;
  }
  if (v.is_string()) {
    // A character is a whole Value: a string becomes a list of ~40 times its size.
    const std::string& s = v.as_string();
    const size_t n = code_point_count(s);
    charge_bytes(add_bytes(sizeof(List), mul_bytes(n, sizeof(Value))), "a string's characters");
    List chars;
    chars.reserve(n);
    for (size_t b = 0; b < s.size();) {
      size_t e = b + 1;
      while (e < s.size() && (static_cast<unsigned char>(s[e]) & 0xC0) == 0x80) ++e;
      chars.push_back(s.substr(b, e - b));
      b = e;
    }
    return chars;
  }
  throw ValueError("'" + v.type_name() + "' object is not iterable");
}

bool has_method(const Value& obj, const std::string& name) {
  static const char* const kString[] = {
      "strip",        "lstrip",       "rstrip", "upper",   "lower",   "title",   "capitalize",
      "startswith",   "endswith",     "split",  "rsplit",  "replace", "find",    "count",
      "removeprefix", "removesuffix", "join",   "isdigit", "isalpha", "isspace", "isalnum"};
  static const char* const kDict[] = {"items", "keys", "values", "get"};
  if (obj.is_string()) {
    for (const char* m : kString)
      if (name == m) return true;
  } else if (obj.is_dict() && !obj.as_dict().is_namespace) {
    for (const char* m : kDict)
      if (name == m) return true;
  }
  return false;
}

std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args) {
  if (obj.is_string()) return string_method(obj.as_string(), name, args);
  if (obj.is_dict() && !obj.as_dict().is_namespace) return dict_method(obj.as_dict(), name, args);
  return std::nullopt;
}

void add_globals(Dict& g) {
  g.set("raise_exception", callable("raise_exception", [](const CallArgs& a) -> Value {
          throw Error(a.positional.empty() ? std::string("raise_exception() called")
                                           : to_str(a.positional[0]));
        }));
  g.set("namespace", callable("namespace", [](const CallArgs& a) {
          auto d = std::make_shared<Dict>();
          d->is_namespace = true;
          for (const Value& p : a.positional) {
            if (!p.is_dict()) throw ValueError("namespace() takes a dict or keyword arguments");
            for (const auto& [k, v] : p.as_dict().items) d->set(k, v);
          }
          for (const auto& [k, v] : a.keyword) d->set(k, v);
          charge_bytes(dict_bytes(*d), "namespace()");
          Value out(d);
          check_nesting_of(out);
          return out;
        }));
  g.set("dict", callable("dict", [](const CallArgs& a) {
          auto d = std::make_shared<Dict>();
          for (const auto& [k, v] : a.keyword) d->set(k, v);
          charge_bytes(dict_bytes(*d), "dict()");
          Value out(d);
          check_nesting_of(out);
          return out;
        }));
  g.set("range", callable("range", [](const CallArgs& a) {
          for (const Value& v : a.positional)
            if (!v.is_int()) throw ValueError("range() takes integers, not " + v.type_name());
          const size_t n = a.positional.size();
          if (n < 1 || n > 3) throw ValueError("range() takes 1 to 3 arguments");
          const int64_t start = n == 1 ? 0 : a.positional[0].as_int();
          const int64_t stop = n == 1 ? a.positional[0].as_int() : a.positional[1].as_int();
          const int64_t step = n == 3 ? a.positional[2].as_int() : 1;
          if (step == 0) throw ValueError("range() step must not be zero");
          // Python's len(range(...)), in unsigned arithmetic: start and stop may be anywhere.
          const bool up = step > 0;
          const uint64_t span =
              up ? (stop > start ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) : 0)
                 : (start > stop ? static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) : 0);
          const uint64_t mag = up ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
          const uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
          // A bound on memory: no chat template needs more.
          constexpr uint64_t kMax = 100'000;
          if (count > kMax) throw ValueError("range() of more than 100000 items");
          charge_bytes(add_bytes(sizeof(List), count * sizeof(Value)), "range()");
          List out;
          out.reserve(count);
          // start + k * step stays between start and stop for k < count: no overflow.
          for (uint64_t k = 0; k < count; ++k)
            out.push_back(static_cast<int64_t>(up ? static_cast<uint64_t>(start) + k * mag
                                                  : static_cast<uint64_t>(start) - k * mag));
          return Value(std::move(out));
        }));
  g.set("strftime_now", callable("strftime_now", [](const CallArgs& a) {
          if (a.positional.empty() || !a.positional[0].is_string())
            throw ValueError("strftime_now() takes a format string");
          const std::time_t t = std::time(nullptr);
          std::tm tm{};
          localtime_r(&t, &tm);
          char buf[256];
          const size_t n = std::strftime(buf, sizeof buf, a.positional[0].as_string().c_str(), &tm);
          return Value(std::string(buf, n));
        }));
}

}  // namespace sandwich::engine::jinja
