#include "tool_choice_schema.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

// A function without parameters takes an empty object.
json parameters_of(const nlohmann::ordered_json& function) {
  const auto p = function.find("parameters");
  if (p == function.end() || p->is_null())
    return {{"type", "object"}, {"properties", json::object()}};
  return json(*p);
}

}  // namespace

json tool_choice_schema(const ToolRequest& r) {
  if (r.choice == ToolChoice::Named) {
    for (const auto& t : r.tools)
      if (t["function"]["name"] == r.function) return parameters_of(t["function"]);
    return json::object();
  }
  json any_of = json::array();
  for (const auto& t : r.tools) {
    const auto& fn = t["function"];
    any_of.push_back({{"type", "object"},
                      {"properties",
                       {{"name", {{"type", "string"}, {"enum", {fn["name"]}}}},
                        {"parameters", parameters_of(fn)}}},
                      {"required", {"name", "parameters"}},
                      {"additionalProperties", false}});
  }
  json items = {{"type", "object"}, {"anyOf", any_of}};
  json schema = {{"type", "array"}, {"minItems", 1}, {"items", items}};
  if (!r.parallel) schema["maxItems"] = 1;
  return schema;
}

}  // namespace sandwich::server
