#pragma once
// The values a Jinja template computes with: Python's, as far as chat templates use them.
// Lists and dicts are shared, not copied, as in Python; templates cannot modify them (HF renders
// in an immutable sandbox) except a namespace's attributes.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/jinja.h"

namespace sandwich::engine::jinja {

// A problem found while computing a value (a wrong type, a bad argument): the evaluator adds
// where in the template it happened.
class ValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;

struct Undefined {
  std::string name;  // what was looked up, for the error when it is used
};
struct None {};

struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Dict>, std::shared_ptr<Callable>>
      v;

  Value() = default;
  Value(None) : v(None{}) {}
  Value(Undefined u) : v(std::move(u)) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(static_cast<int64_t>(i)) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(List l) : v(std::make_shared<List>(std::move(l))) {}
  Value(std::shared_ptr<Dict> d) : v(std::move(d)) {}
  Value(std::shared_ptr<Callable> c) : v(std::move(c)) {}

  bool is_undefined() const { return std::holds_alternative<Undefined>(v); }
  bool is_none() const { return std::holds_alternative<None>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<List>>(v); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<Dict>>(v); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<Callable>>(v); }

  bool as_bool() const { return std::get<bool>(v); }
  int64_t as_int() const { return std::get<int64_t>(v); }
  double as_number() const {
    return is_int() ? static_cast<double>(as_int()) : std::get<double>(v);
  }
  const std::string& as_string() const { return std::get<std::string>(v); }
  const List& as_list() const { return *std::get<std::shared_ptr<List>>(v); }
  Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(v); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(v); }

  // Python's truth: empty strings and containers, zero, None and undefined are false.
  bool truthy() const;
  // Python's type name, for error messages.
  std::string type_name() const;
};

// A Python dict with string keys, in insertion order (tojson and items() keep it).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): the one object `set ns.x = ...` may change

  const Value* find(const std::string& k) const {
    for (auto& [key, val] : items)
      if (key == k) return &val;
    return nullptr;
  }
  void set(const std::string& k, Value val) {
    for (auto& [key, old] : items)
      if (key == k) {
        old = std::move(val);
        return;
      }
    items.emplace_back(k, std::move(val));
  }
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kw(const std::string& k) const {
    for (auto& [key, val] : keyword)
      if (key == k) return &val;
    return nullptr;
  }
};

// A global function or a macro.
struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

inline Value make_dict() {
  return Value(std::make_shared<Dict>());
}

// JSON values in, for the render context (object members keep their order).
Value from_json(const nlohmann::ordered_json& j);

// Python's str() and repr() of a value, and its tojson (Python's json.dumps with
// ensure_ascii=False; indent < 0 for one line).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
std::string to_json(const Value& v, int indent);

// Python's ==.
bool values_equal(const Value& a, const Value& b);

// Throws ValueError for a value that nests lists, dicts and namespaces deeper than any real one
// (256 levels): checked where a template builds one, so that no value outgrows the stack.
void check_nesting_of(const Value& v);

// Where each code point of a UTF-8 string starts: Python indexes and measures strings by them.
std::vector<size_t> code_points(const std::string& s);
size_t code_point_count(std::string_view s);
// hay.find(needle, from) in linear time (std::string::find may take |hay| * |needle| steps).
size_t find_text(std::string_view hay, std::string_view needle, size_t from = 0);
// Where code point i starts; s.size() for i at or past the end.
size_t code_point_offset(std::string_view s, size_t i);

}  // namespace sandwich::engine::jinja
