#pragma once
// What templates call by name: filters (x | f), tests (x is t), methods of strings, dicts and
// lists (x.strip()), and the global functions (raise_exception, namespace, range, ...). Each
// throws ValueError for a wrong type or argument, or Error for raise_exception.
#include <optional>
#include <string>

#include "text/jinja_value.h"

namespace sandwich::engine::jinja {

Value apply_filter(const std::string& name, const Value& in, const CallArgs& args);
bool apply_test(const std::string& name, const Value& in, const CallArgs& args);
// nullopt: `obj` has no such method (the attribute is then looked up as a key).
std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args);
bool has_method(const Value& obj, const std::string& name);
// The globals jinja2 and HF's apply_chat_template define.
void add_globals(Dict& globals);

// Python's str.strip family: chars empty means whitespace.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
// Python's printf-style formatting (fmt % args, the format filter): %s, %r, %d, %i, %f, %%.
std::string py_format(const std::string& fmt, const List& args);
// A value as a list to iterate: lists, dict keys, a string's characters; undefined is empty.
List iterate(const Value& v);

}  // namespace sandwich::engine::jinja
