// jinja2's filters and tests, those chat templates use.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "text/jinja_budget.h"
#include "text/jinja_builtins.h"

namespace sandwich::engine::jinja {
namespace {

const Value kNone{None{}};

// By value: callers pass temporaries as the fallback and keep the result.
Value arg(const CallArgs& a, size_t i, const char* name, const Value& fallback = kNone) {
  if (i < a.positional.size()) return a.positional[i];
  if (const Value* v = a.kw(name)) return *v;
  return fallback;
}

CallArgs method_args(std::vector<Value> positional) {
  CallArgs a;
  a.positional = std::move(positional);
  return a;
}

std::string string_method(const Value& in, const char* m) {
  return call_method(Value(to_str(in)), m, {})->as_string();
}

int64_t length(const Value& v) {
  if (v.is_string()) return static_cast<int64_t>(code_point_count(v.as_string()));
  if (v.is_list()) return static_cast<int64_t>(v.as_list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().items.size());
  if (v.is_undefined()) return 0;
  throw ValueError("object of type '" + v.type_name() + "' has no len()");
}

// An attribute of an item, dotted paths and list indices included ("function.name", "0").
Value attribute(const Value& item, const std::string& path) {
  Value cur = item;
  size_t b = 0;
  while (b <= path.size()) {
    const size_t e = std::min(path.find('.', b), path.size());
    const std::string part = path.substr(b, e - b);
    if (cur.is_dict()) {
      const Value* v = cur.as_dict().find(part);
      cur = v ? *v : Value(Undefined{part});
    } else if (cur.is_list() && !part.empty() &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      // More digits than an index can have: past the end of any list.
      const size_t i = part.size() > 12 ? SIZE_MAX : std::stoul(part);
      cur = i < cur.as_list().size() ? cur.as_list()[i] : Value(Undefined{part});
    } else {
      return Undefined{part};
    }
    b = e + 1;
  }
  return cur;
}

bool less(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    auto n = [](const Value& x) { return x.is_bool() ? (x.as_bool() ? 1.0 : 0.0) : x.as_number(); };
    return n(a) < n(b);
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  throw ValueError("'<' not supported between '" + a.type_name() + "' and '" + b.type_name() + "'");
}

// select/reject and selectattr/rejectattr: args are (attribute,) test, test arguments.
Value select(const Value& in, const CallArgs& a, bool by_attr, bool keep) {
  size_t i = 0;
  std::string attr;
  if (by_attr) {
    const Value& at = arg(a, i++, "attribute");
    if (!at.is_string()) throw ValueError("selectattr()/rejectattr() need an attribute name");
    attr = at.as_string();
  }
  const Value& test = i < a.positional.size() ? a.positional[i] : kNone;
  if (!test.is_none() && !test.is_string()) throw ValueError("the test must be named by a string");
  CallArgs test_args;
  for (size_t k = i + 1; k < a.positional.size(); ++k)
    test_args.positional.push_back(a.positional[k]);
  List out;
  for (const Value& item : iterate(in)) {
    charge_steps(1);
    const Value subject = by_attr ? attribute(item, attr) : item;
    const bool pass =
        test.is_none() ? subject.truthy() : apply_test(test.as_string(), subject, test_args);
    if (pass == keep) out.push_back(item);
  }
  charge_bytes(list_bytes(out), "select()");
  return out;
}

Value to_int(const Value& in, const Value& fallback) {
  if (in.is_int()) return in;
  if (in.is_bool()) return static_cast<int64_t>(in.as_bool());
  if (in.is_float()) {
    const double d = std::get<double>(in.v);
    if (std::isnan(d)) return fallback;  // Python: ValueError, which jinja2 turns into the default
    return checked_to_int(d, "int()");
  }
  if (in.is_string()) {
    const std::string s = py_strip(in.as_string(), nullptr, true, true);
    const char* b = s.data() + (!s.empty() && s[0] == '+' && s.size() > 1 && s[1] != '-');
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(b, s.data() + s.size(), v);
    if (end == s.data() + s.size() && b != end) {
      if (ec == std::errc()) return v;
      if (ec == std::errc::result_out_of_range) integer_overflow("int()");
    }
    double d = 0;
    try {
      size_t used = 0;
      d = std::stod(s, &used);  // jinja2 reads "3.5" as 3
      if (used != s.size() || std::isnan(d)) return fallback;
    } catch (const std::exception&) {  // not a number, or past a double's range
      return fallback;
    }
    return checked_to_int(d, "int()");
  }
  return fallback;
}

Value to_float(const Value& in, const Value& fallback) {
  if (in.is_number()) return in.as_number();
  if (in.is_bool()) return in.as_bool() ? 1.0 : 0.0;
  if (in.is_string()) {
    try {
      size_t used = 0;
      const std::string s = py_strip(in.as_string(), nullptr, true, true);
      const double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

// Each filter gets its own name too: some serve two names ("first" and "last").
using Filter = Value (*)(const std::string& name, const Value& in, const CallArgs& a);

Value trim(const std::string&, const Value& in, const CallArgs& a) {
  const Value& chars = arg(a, 0, "chars");
  return py_strip(to_str(in), chars.is_string() ? &chars.as_string() : nullptr, true, true);
}

Value tojson(const std::string&, const Value& in, const CallArgs& a) {
  const Value& indent = arg(a, 0, "indent");
  if (!indent.is_none() && !indent.is_int())
    throw ValueError("tojson(): indent must be an integer");
  return to_json(
      in, indent.is_int() ? static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64)) : -1);
}

Value length_of(const std::string&, const Value& in, const CallArgs&) {
  return length(in);
}

Value string_case(const std::string& f, const Value& in, const CallArgs&) {
  return string_method(in, f.c_str());
}

Value default_value(const std::string&, const Value& in, const CallArgs& a) {
  static const Value empty{std::string()};
  const bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
  if (in.is_undefined() || (boolean && !in.truthy())) return arg(a, 0, "default_value", empty);
  return in;
}

Value first_or_last(const std::string& f, const Value& in, const CallArgs&) {
  if (in.is_list()) {  // without copying the list
    const List& l = in.as_list();
    if (l.empty()) return Undefined{"first"};
    return f == "first" ? l.front() : l.back();
  }
  if (in.is_string()) {
    const std::string& s = in.as_string();
    if (s.empty()) return Undefined{"first"};
    const size_t n = code_point_count(s);
    const size_t b = code_point_offset(s, f == "first" ? 0 : n - 1);
    return s.substr(b, code_point_offset(s, f == "first" ? 1 : n) - b);
  }
  const List items = iterate(in);
  if (items.empty()) return Undefined{"first"};
  return f == "first" ? items.front() : items.back();
}

Value join(const std::string&, const Value& in, const CallArgs& a) {
  static const Value empty{std::string()};
  const Value& sep = arg(a, 0, "d", empty);
  const Value& attr = arg(a, 1, "attribute");
  const std::string separator = to_str(sep);
  std::string out;
  bool first = true;
  for (const Value& v : iterate(in)) {
    if (!first) append_checked(out, separator, "join");
    first = false;
    const Value item = attr.is_string() ? attribute(v, attr.as_string()) : v;
    append_checked(out, item.is_string() ? item.as_string() : to_str(item), "join");
  }
  return out;
}

Value replace(const std::string&, const Value& in, const CallArgs& a) {
  CallArgs m = method_args({arg(a, 0, "old"), arg(a, 1, "new")});
  if (const Value* c = a.positional.size() > 2 ? &a.positional[2] : a.kw("count"))
    m.positional.push_back(*c);
  return *call_method(Value(to_str(in)), "replace", m);
}

Value format(const std::string&, const Value& in, const CallArgs& a) {
  if (!in.is_string()) throw ValueError("format needs a format string");
  return py_format(in.as_string(), a.positional);
}

Value list_of(const std::string&, const Value& in, const CallArgs&) {
  return iterate(in);
}
Value string_of(const std::string&, const Value& in, const CallArgs&) {
  return to_str(in);
}
Value safe(const std::string&, const Value& in, const CallArgs&) {
  return in;
}

Value int_of(const std::string&, const Value& in, const CallArgs& a) {
  return to_int(in, arg(a, 0, "default", Value(0)));
}

Value float_of(const std::string&, const Value& in, const CallArgs& a) {
  return to_float(in, arg(a, 0, "default", Value(0.0)));
}

Value abs_of(const std::string&, const Value& in, const CallArgs&) {
  if (in.is_int()) return in.as_int() < 0 ? checked_neg(in.as_int(), "abs()") : in.as_int();
  if (in.is_float()) return std::fabs(in.as_number());
  throw ValueError("bad operand type for abs(): '" + in.type_name() + "'");
}

Value items(const std::string&, const Value& in, const CallArgs&) {
  if (in.is_undefined()) return List{};
  if (!in.is_dict()) throw ValueError("items() needs a mapping, not " + in.type_name());
  return *call_method(in, "items", {});
}

Value dictsort(const std::string&, const Value& in, const CallArgs& a) {
  if (!in.is_dict()) throw ValueError("dictsort needs a mapping, not " + in.type_name());
  List items = call_method(in, "items", {})->as_list();
  charge_steps(static_cast<int64_t>(items.size()) * 24);  // n log n comparisons
  const bool by_value =
      arg(a, 1, "by", Value("key")).truthy() && to_str(arg(a, 1, "by", Value("key"))) == "value";
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return less(x.as_list()[by_value ? 1 : 0], y.as_list()[by_value ? 1 : 0]);
  });
  return items;
}

Value select_by_attribute(const std::string& f, const Value& in, const CallArgs& a) {
  return select(in, a, true, f == "selectattr");
}

Value select_by_test(const std::string& f, const Value& in, const CallArgs& a) {
  return select(in, a, false, f == "select");
}

Value map(const std::string&, const Value& in, const CallArgs& a) {
  List out;
  const Value* attr = a.kw("attribute");
  size_t bytes = sizeof(List);
  for (const Value& v : iterate(in)) {
    charge_steps(1);
    if (attr) {
      Value x = attribute(v, to_str(*attr));
      if (x.is_undefined())
        if (const Value* d = a.kw("default")) x = *d;
      out.push_back(std::move(x));
    } else {
      if (a.positional.empty() || !a.positional[0].is_string())
        throw ValueError("map() needs a filter name or attribute=");
      CallArgs rest;
      rest.positional.assign(a.positional.begin() + 1, a.positional.end());
      out.push_back(apply_filter(a.positional[0].as_string(), v, rest));
    }
    bytes = add_bytes(bytes, value_bytes(out.back()));
    check_bytes(bytes, "map()");
  }
  charge_bytes(bytes, "map()");
  return out;
}

Value reverse(const std::string&, const Value& in, const CallArgs&) {
  if (in.is_string()) {  // code point by code point, from the end
    const std::string& s = in.as_string();
    std::string out;
    out.reserve(s.size());
    for (size_t e = s.size(); e > 0;) {
      size_t b = e - 1;
      while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
      out.append(s, b, e - b);
      e = b;
    }
    return out;
  }
  List l = iterate(in);
  std::reverse(l.begin(), l.end());
  return l;
}

Value sort(const std::string&, const Value& in, const CallArgs& a) {
  List l = iterate(in);
  const bool reverse = arg(a, 0, "reverse", Value(false)).truthy();
  const Value& attr = arg(a, 2, "attribute");
  auto key = [&](const Value& v) { return attr.is_string() ? attribute(v, attr.as_string()) : v; };
  charge_steps(static_cast<int64_t>(l.size()) * 24);  // n log n comparisons
  std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return l;
}

Value unique(const std::string&, const Value& in, const CallArgs&) {
  List out;
  for (const Value& v : iterate(in)) {
    charge_steps(static_cast<int64_t>(out.size()) + 1);  // quadratic: each item against each kept
    bool seen = false;
    for (const Value& o : out) seen = seen || values_equal(o, v);
    if (!seen) out.push_back(v);
  }
  return out;
}

Value sum(const std::string&, const Value& in, const CallArgs& a) {
  Value total = arg(a, 1, "start", Value(0));
  const Value& attr = arg(a, 0, "attribute");
  for (const Value& v : iterate(in)) {
    const Value x = attr.is_string() ? attribute(v, attr.as_string()) : v;
    if (!x.is_number() || !total.is_number()) throw ValueError("sum() needs numbers");
    if (x.is_int() && total.is_int())
      total = checked_add(total.as_int(), x.as_int(), "sum()");
    else
      total = total.as_number() + x.as_number();
  }
  return total;
}

Value min_or_max(const std::string& f, const Value& in, const CallArgs&) {
  const List l = iterate(in);
  if (l.empty()) return Undefined{f};
  Value best = l[0];
  for (const Value& v : l)
    if (f == "min" ? less(v, best) : less(best, v)) best = v;
  return best;
}

Value round(const std::string&, const Value& in, const CallArgs& a) {
  const Value& p = arg(a, 0, "precision", Value(0));
  const std::string method = to_str(arg(a, 1, "method", Value("common")));
  if (!in.is_number() || !p.is_int()) throw ValueError("round() needs a number");
  const double scale = std::pow(10.0, static_cast<double>(p.as_int()));
  const double x = in.as_number() * scale;
  if (!std::isfinite(x) || scale == 0) return in.as_number();  // no digits to round at all
  const double r = method == "floor"  ? std::floor(x)
                   : method == "ceil" ? std::ceil(x)
                                      : std::round(x);
  return r / scale;
}

Value indent(const std::string&, const Value& in, const CallArgs& a) {
  const Value& w = arg(a, 0, "width", Value(4));
  const std::string pad =
      w.is_string()
          ? w.as_string()
          : std::string(
                static_cast<size_t>(std::clamp<int64_t>(w.is_int() ? w.as_int() : 4, 0, 256)), ' ');
  const bool first = arg(a, 1, "first", Value(false)).truthy();
  const bool blank = arg(a, 2, "blank", Value(false)).truthy();
  const std::string s = to_str(in);
  std::string out;
  size_t b = 0;
  bool first_line = true;
  for (;;) {
    const size_t e = s.find('\n', b);
    const std::string_view line =
        std::string_view(s).substr(b, e == std::string::npos ? std::string::npos : e - b);
    if ((!first_line || first) && (blank || !line.empty())) append_checked(out, pad, "indent");
    append_checked(out, line, "indent");
    first_line = false;
    if (e == std::string::npos) break;
    append_checked(out, "\n", "indent");
    b = e + 1;
  }
  return out;
}

Value escape(const std::string&, const Value& in, const CallArgs&) {
  const std::string s = to_str(in);
  size_t bytes = s.size();
  for (char c : s) bytes += c == '&' || c == '<' || c == '>' ? 4 : c == '"' || c == '\'' ? 5 : 0;
  check_bytes(bytes, "escape");
  std::string out;
  out.reserve(bytes);
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const std::unordered_map<std::string_view, Filter>& filters() {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"trim", trim},
      {"tojson", tojson},
      {"length", length_of},
      {"count", length_of},
      {"upper", string_case},
      {"lower", string_case},
      {"title", string_case},
      {"capitalize", string_case},
      {"default", default_value},
      {"d", default_value},
      {"first", first_or_last},
      {"last", first_or_last},
      {"join", join},
      {"replace", replace},
      {"format", format},
      {"list", list_of},
      {"string", string_of},
      {"safe", safe},
      {"int", int_of},
      {"float", float_of},
      {"abs", abs_of},
      {"items", items},
      {"dictsort", dictsort},
      {"selectattr", select_by_attribute},
      {"rejectattr", select_by_attribute},
      {"select", select_by_test},
      {"reject", select_by_test},
      {"map", map},
      {"reverse", reverse},
      {"sort", sort},
      {"unique", unique},
      {"sum", sum},
      {"min", min_or_max},
      {"max", min_or_max},
      {"round", round},
      {"indent", indent},
      {"escape", escape},
      {"e", escape},
  };
  return table;
}

}  // namespace

Value apply_filter(const std::string& f, const Value& in, const CallArgs& a) {
  const auto it = filters().find(f);
  if (it == filters().end()) throw ValueError("unknown filter '" + f + "'");
  return it->second(f, in, a);
}

bool apply_test(const std::string& t, const Value& in, const CallArgs& a) {
  const Value& x = arg(a, 0, "value");
  if (t == "defined") return !in.is_undefined();
  if (t == "undefined") return in.is_undefined();
  if (t == "none") return in.is_none();
  if (t == "string") return in.is_string();
  if (t == "number") return in.is_number();
  if (t == "integer") return in.is_int();
  if (t == "float") return in.is_float();
  if (t == "boolean") return in.is_bool();
  if (t == "true") return in.is_bool() && in.as_bool();
  if (t == "false") return in.is_bool() && !in.as_bool();
  if (t == "mapping") return in.is_dict();
  if (t == "iterable") return in.is_list() || in.is_dict() || in.is_string();
  if (t == "sequence") return in.is_list() || in.is_dict() || in.is_string();
  if (t == "callable") return in.is_callable();
  if (t == "lower" || t == "upper") {
    if (!in.is_string()) return false;
    const std::string s = in.as_string();
    return s == call_method(in, t, {})->as_string();
  }
  if (t == "even" || t == "odd" || t == "divisibleby") {
    if (!in.is_int()) throw ValueError("'" + t + "' tests an integer, not " + in.type_name());
    const int64_t n = in.as_int();
    if (t == "divisibleby") {
      if (!x.is_int() || x.as_int() == 0) throw ValueError("divisibleby needs a nonzero integer");
      return x.as_int() == -1 || n % x.as_int() == 0;  // INT64_MIN % -1 traps
    }
    return (n % 2 == 0) == (t == "even");
  }
  if (t == "eq" || t == "equalto" || t == "==") return values_equal(in, x);
  if (t == "ne" || t == "!=") return !values_equal(in, x);
  if (t == "lt" || t == "lessthan" || t == "<") return less(in, x);
  if (t == "gt" || t == "greaterthan" || t == ">") return less(x, in);
  if (t == "le" || t == "<=") return !less(x, in);
  if (t == "ge" || t == ">=") return !less(in, x);
  if (t == "sameas") {
    if (in.v.index() != x.v.index()) return false;
    if (in.is_list()) return &in.as_list() == &x.as_list();
    if (in.is_dict()) return &in.as_dict() == &x.as_dict();
    return values_equal(in, x);
  }
  if (t == "in") {
    if (x.is_list()) charge_steps(static_cast<int64_t>(x.as_list().size()));
    for (const Value& v : iterate(x))
      if (values_equal(v, in)) return true;
    if (x.is_string() && in.is_string())
      return find_text(x.as_string(), in.as_string()) != std::string::npos;
    return false;
  }
  throw ValueError("unknown test '" + t + "'");
}

}  // namespace sandwich::engine::jinja
