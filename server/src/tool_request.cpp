#include "tool_request.h"

#include <set>

#include "api_error.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

// One entry of 'tools': {"type": "function", "function": {"name", "description"?, "parameters"?,
// "strict"?}}. Returns its name.
std::string check_tool(const json& t, size_t i) {
  const std::string at = "tools[" + std::to_string(i) + "]";
  if (!t.is_object())
    bad("'" + at + "' must be an object {\"type\": \"function\", \"function\": {...}}", "tools");
  const Fields f(t);
  const auto type = f.string("type");
  if (!type) bad("'" + at + ".type' is required (\"function\")", "tools");
  if (*type != "function")
    bad("'" + at + ".type' is '" + *type + "'; only \"function\" tools are supported", "tools");
  const json* fn = f.get("function");
  if (!fn || !fn->is_object()) bad("'" + at + ".function' must be an object", "tools");
  const Fields ff(*fn);
  const json* name = ff.get("name");
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
    bad("'" + at + ".function.name' must be a non-empty string", "tools");
  if (const json* d = ff.get("description"); d && !d->is_string())
    bad("'" + at + ".function.description' must be a string", "tools");
  if (const json* p = ff.get("parameters"); p && !p->is_object())
    bad("'" + at + ".function.parameters' must be a JSON Schema object", "tools");
  if (const json* s = ff.get("strict"); s && !s->is_boolean())
    bad("'" + at + ".function.strict' must be a boolean", "tools");
  return name->get<std::string>();
}

}  // namespace

ToolRequest parse_tool_request(const Fields& f) {
  // The legacy names: mapping them would answer in tool_calls, which their clients do not read.
  if (const json* fs = f.get("functions"); fs && !(fs->is_array() && fs->empty()))
    bad("'functions' is deprecated and not supported; send 'tools' ([{\"type\": \"function\", "
        "\"function\": {...}}]) instead",
        "functions");
  if (const json* fc = f.get("function_call"); fc && !(fc->is_string() && *fc == "none"))
    bad("'function_call' is deprecated and not supported; send 'tool_choice' instead",
        "function_call");
  ToolRequest r;
  std::set<std::string> names;
  if (const json* tools = f.get("tools")) {
    if (!tools->is_array()) bad("'tools' must be a list of tools", "tools");
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string name = check_tool((*tools)[i], i);
      if (!names.insert(name).second)
        bad("'tools' declares the function '" + name + "' twice", "tools");
    }
    if (!tools->empty()) r.tools = *tools;
  }
  r.parallel = f.boolean("parallel_tool_calls", true);
  r.choice = names.empty() ? ToolChoice::None : ToolChoice::Auto;
  if (const json* c = f.get("tool_choice")) {
    if (c->is_string()) {
      const std::string& s = c->get_ref<const std::string&>();
      if (s == "none")
        r.choice = ToolChoice::None;
      else if (s == "auto")
        r.choice = names.empty() ? ToolChoice::None : ToolChoice::Auto;
      else if (s == "required")
        r.choice = ToolChoice::Required;
      else
        bad("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
            "\"function\": {\"name\": ...}}, got \"" +
                s + "\"",
            "tool_choice");
    } else if (c->is_object()) {
      const Fields cf(*c);
      const json* fn = cf.get("function");
      const json* name = fn && fn->is_object() ? Fields(*fn).get("name") : nullptr;
      if (cf.string("type").value_or("") != "function" || !name || !name->is_string())
        bad("a named 'tool_choice' must be {\"type\": \"function\", \"function\": {\"name\": "
            "...}}",
            "tool_choice");
      r.choice = ToolChoice::Named;
      r.function = name->get<std::string>();
      if (!names.contains(r.function))
        bad("'tool_choice' names the function '" + r.function + "', which is not in 'tools'",
            "tool_choice");
    } else {
      bad("'tool_choice' must be a string or an object", "tool_choice");
    }
  }
  if (r.choice == ToolChoice::Required && names.empty())
    bad("'tool_choice' \"required\" needs 'tools'", "tool_choice");
  if (r.choice == ToolChoice::Required || r.choice == ToolChoice::Named) {
    // Both would constrain the same output with their own grammar.
    for (const char* k : {"guided_json", "guided_regex", "guided_choice", "guided_grammar",
                          "structured_outputs", "grammar", "json_schema"})
      if (f.get(k))
        bad(std::string("'tool_choice' ") +
                (r.choice == ToolChoice::Named ? "naming a function" : "\"required\"") +
                " already constrains the output; it cannot be combined with '" + k + "'",
            "tool_choice");
    if (const json* rf = f.get("response_format");
        rf && !(rf->is_object() && rf->value("type", std::string()) == "text"))
      bad(std::string("'tool_choice' ") +
              (r.choice == ToolChoice::Named ? "naming a function" : "\"required\"") +
              " already constrains the output; it cannot be combined with a 'response_format'",
          "tool_choice");
  }
  return r;
}

}  // namespace sandwich::server
