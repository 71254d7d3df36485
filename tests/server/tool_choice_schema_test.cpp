// tool_choice required and named as grammars: the JSON Schema built from the tools, compiled to
// GBNF, accepts exactly the calls the parsers turn back into tool_calls (and nothing that would
// not be a valid call of a declared function).
#include "tool_choice_schema.h"

#include <gtest/gtest.h>

#include "engine/grammar/grammar.h"
#include "tool_call_stream.h"
#include "tool_request.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

ToolRequest tools_request(const json& body) {
  json b = body;
  b["tools"] = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"enum": ["Paris", "Tokyo"]}, "celsius": {"type": "boolean"}},
      "required": ["city", "celsius"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "get_time"}}])");
  return parse_tool_request(Fields(b));
}

std::shared_ptr<const engine::grammar::Grammar> grammar_of(const ToolRequest& r) {
  return engine::grammar::Grammar::parse(
      engine::grammar::gbnf_from_json_schema(tool_choice_schema(r)));
}

// What the parser of the choice makes of a whole output: the calls' names and arguments.
json calls_of(ToolCallParsing::Kind kind, const std::string& function, const std::string& text) {
  ToolCallParsing p;
  p.kind = kind;
  p.function = function;
  ToolCallStream s(p);
  ToolCallStream::Step a = s.push(text), b = s.finish();
  EXPECT_EQ(a.content + b.content, "") << text;
  json out = json::array();
  for (auto& c : b.tool_calls)
    out.push_back(
        {c["function"]["name"], json::parse(c["function"]["arguments"].get<std::string>())});
  return out;
}

TEST(ToolChoiceSchema, RequiredIsAListOfCallsOfDeclaredFunctions) {
  const auto g = grammar_of(tools_request({{"tool_choice", "required"}}));
  const std::string one =
      R"([{"name": "get_weather", "parameters": {"city": "Paris", "celsius": true}}])";
  const std::string two =
      R"([{"name": "get_time", "parameters": {}}, )"
      R"({"name": "get_weather", "parameters": {"city": "Tokyo", "celsius": false}}])";
  EXPECT_TRUE(g->accepts(one));
  EXPECT_TRUE(g->accepts(two));
  EXPECT_EQ(
      calls_of(ToolCallParsing::Kind::Required, "", two),
      json::parse(R"([["get_time", {}], ["get_weather", {"city": "Tokyo", "celsius": false}]])"));
  for (const char* bad :
       {"[]", R"([{"name": "nope", "parameters": {}}])",
        R"([{"name": "get_weather", "parameters": {"city": "Rome", "celsius": true}}])",
        R"([{"name": "get_weather", "parameters": {"city": "Paris"}}])",
        R"([{"name": "get_time", "parameters": {}, "x": 1}])", R"({"name": "get_time"})"})
    EXPECT_FALSE(g->accepts(bad)) << bad;
  // One call at most without parallel_tool_calls.
  const auto single =
      grammar_of(tools_request({{"tool_choice", "required"}, {"parallel_tool_calls", false}}));
  EXPECT_TRUE(single->accepts(one));
  EXPECT_FALSE(single->accepts(two));
}

TEST(ToolChoiceSchema, NamedIsThatFunctionsArguments) {
  const json weather = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  const auto g = grammar_of(tools_request({{"tool_choice", weather}}));
  const std::string args = R"({"city": "Tokyo", "celsius": false})";
  EXPECT_TRUE(g->accepts(args));
  EXPECT_FALSE(g->accepts(R"({"city": "Tokyo"})"));
  EXPECT_FALSE(g->accepts(R"([{"name": "get_weather", "parameters": {}}])"));
  EXPECT_EQ(calls_of(ToolCallParsing::Kind::Named, "get_weather", args),
            json::array({json::array({"get_weather", json::parse(args)})}));
  // A function without parameters takes an empty object.
  const json time = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  EXPECT_TRUE(grammar_of(tools_request({{"tool_choice", time}}))->accepts("{}"));
}

}  // namespace
}  // namespace sandwich::server
