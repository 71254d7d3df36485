// Methods of strings, dicts and lists as Python has them, and the global functions.
#include <cctype>
#include <cstdio>
#include <ctime>

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

List split(const std::string& s, const std::string* sep, int64_t maxsplit) {
  List out;
  if (!sep) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && py_space(s[e - 1])) --e;
        out.push_back(s.substr(i, e - i));
        break;
      }
      size_t e = i;
      while (e < s.size() && !py_space(s[e])) ++e;
      out.push_back(s.substr(i, e - i));
      i = e;
    }
    return out;
  }
  if (sep->empty()) throw ValueError("split(): empty separator");
  size_t b = 0;
  for (;;) {
    const size_t e = s.find(*sep, b);
    if (e == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) {
      out.push_back(s.substr(b));
      return out;
    }
    out.push_back(s.substr(b, e - b));
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
    int64_t n = count.is_int() ? count.as_int() : -1;
    std::string out;
    size_t b = 0;
    if (from.empty()) return s;
    for (size_t e; n != 0 && (e = s.find(from, b)) != std::string::npos; --n) {
      out.append(s, b, e - b).append(to);
      b = e + from.size();
    }
    return out.append(s, b);
  }
  if (m == "find" || m == "count") {
    const std::string& x = string_arg(a, 0, "sub", m);
    if (m == "find") {
      const size_t at = s.find(x);
      return at == std::string::npos ? int64_t{-1}
                                     : static_cast<int64_t>(code_points(s.substr(0, at)).size());
    }
    if (x.empty()) return static_cast<int64_t>(code_points(s).size() + 1);
    int64_t n = 0;
    for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
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
      if (!first) out += s;
      first = false;
      out += to_str(v);
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
    List out;
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
      out += fmt[i];
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
      out += to_str(a);
    } else if (c == 'r') {
      out += to_repr(a);
    } else if (c == 'd' || c == 'i') {
      if (!a.is_number() && !a.is_bool()) throw ValueError("%d format: a number is required");
      out += std::to_string(a.is_bool()  ? int64_t{a.as_bool()}
                            : a.is_int() ? a.as_int()
                                         : static_cast<int64_t>(a.as_number()));
    } else if (c == 'f') {
      if (!a.is_number()) throw ValueError("%f format: a number is required");
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", a.as_number());
      out += buf;
    } else {
      throw ValueError(std::string("unsupported format character '") + c + "'");
    }
  }
  if (next < args.size()) throw ValueError("not all arguments converted during string formatting");
  return out;
}

List iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_undefined()) return {};
  if (v.is_dict()) {
    List keys;
    for (const auto& kv : v.as_dict().items) keys.push_back(kv.first);
    return keys;
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const std::vector<size_t> cp = code_points(s);
    List chars;
    for (size_t i = 0; i < cp.size(); ++i)
      chars.push_back(s.substr(cp[i], (i + 1 < cp.size() ? cp[i + 1] : s.size()) - cp[i]));
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
          Value out(d);
          check_nesting_of(out);
          return out;
        }));
  g.set("dict", callable("dict", [](const CallArgs& a) {
          auto d = std::make_shared<Dict>();
          for (const auto& [k, v] : a.keyword) d->set(k, v);
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
          // A bound on memory: no chat template needs more.
          constexpr int64_t kMax = 100'000;
          List out;
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (static_cast<int64_t>(out.size()) >= kMax)
              throw ValueError("range() of more than 100000 items");
            out.push_back(i);
          }
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
