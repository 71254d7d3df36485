// Tool-call parsers of each published format (Llama-3 JSON, Hermes/Qwen, Mistral) and of the
// grammar-forced tool choices: whole outputs, the same outputs streamed in every chunking (the
// content streamed is the content of the whole, so no call markup leaks), malformed calls left as
// content, several calls, unicode and nested arguments.
#include <random>

#include <gtest/gtest.h>

#include "special_text_filter.h"
#include "tool_call_json.h"
#include "tool_call_stream.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

ToolCallParsing format(ToolCallFormat f) {
  ToolCallParsing p;
  p.kind = ToolCallParsing::Kind::Format;
  p.format = f;
  return p;
}
ToolCallParsing forced(ToolCallParsing::Kind k, std::string function = {}) {
  ToolCallParsing p;
  p.kind = k;
  p.function = std::move(function);
  return p;
}

struct Result {
  std::string content;
  json calls = json::array();  // OpenAI's tool_calls, ids dropped
};

// The output pushed in pieces of the given sizes (cycled), as a whole response would be made.
Result run(const ToolCallParsing& p, const std::string& text, std::vector<size_t> sizes) {
  ToolCallStream s(p);
  Result r;
  auto add = [&](ToolCallStream::Step st) {
    r.content += st.content;
    for (auto& c : st.tool_calls) {
      EXPECT_TRUE(c["id"].is_string());
      c.erase("id");
      r.calls.push_back(c);
    }
  };
  size_t pos = 0, i = 0;
  while (pos < text.size()) {
    const size_t n = std::min(sizes[i++ % sizes.size()], text.size() - pos);
    add(s.push(text.substr(pos, n)));
    pos += n;
  }
  add(s.finish());
  return r;
}

json call(size_t index, const std::string& name, const json& args) {
  return {{"index", index},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

// Whole, and streamed in every chunking of sizes 1..7 and in random ones: the same result.
void expect_parse(const ToolCallParsing& p, const std::string& text, const std::string& content,
                  const std::vector<json>& call_list) {
  const json calls = call_list;
  const Result whole = run(p, text, {text.size() + 1});
  EXPECT_EQ(whole.content, content) << text;
  EXPECT_EQ(whole.calls, calls) << text;
  for (size_t n = 1; n <= 7; ++n) {
    const Result r = run(p, text, {n});
    EXPECT_EQ(r.content, content) << text << " in pieces of " << n;
    EXPECT_EQ(r.calls, calls) << text << " in pieces of " << n;
  }
  std::mt19937 rng(7);
  for (int t = 0; t < 20; ++t) {
    std::vector<size_t> sizes;
    for (int k = 0; k < 16; ++k) sizes.push_back(1 + rng() % 12);
    const Result r = run(p, text, sizes);
    EXPECT_EQ(r.content, content) << text;
    EXPECT_EQ(r.calls, calls) << text;
  }
}

// While a call is being written nothing of it is content: every prefix of the output gives, so
// far, a prefix of the final content.
void expect_no_leak(const ToolCallParsing& p, const std::string& text, const std::string& content) {
  ToolCallStream s(p);
  std::string so_far;
  for (char c : text) {
    so_far += s.push(std::string(1, c)).content;
    ASSERT_EQ(content.substr(0, so_far.size()), so_far) << text;
  }
}

const json kWeather = {{"city", "Paris"}, {"unit", "celsius"}};
const json kNested = {{"a", {1, {{"b", {{"c", nullptr}}}}, "x}]\"{"}}, {"ok", true}};
const json kUnicode = {{"city", "Zürich 東京 🚀"}, {"note", "line\nbreak \"quoted\""}};

TEST(ToolCallParser, Llama3Json) {
  const auto p = format(ToolCallFormat::Llama3Json);
  const std::string w = json{{"name", "get_weather"}, {"parameters", kWeather}}.dump();
  expect_parse(p, "<|python_tag|>" + w, "", {call(0, "get_weather", kWeather)});
  expect_parse(p, w, "", {call(0, "get_weather", kWeather)});
  expect_parse(p, "  \n" + w + "  ", "", {call(0, "get_weather", kWeather)});
  // Several, separated by ';'; nested and unicode arguments; "arguments" taken for "parameters".
  const std::string two = "<|python_tag|>" + w + "; " +
                          json{{"name", "deep"}, {"arguments", kNested}}.dump() + ";" +
                          json{{"name", "u"}, {"parameters", kUnicode}}.dump();
  expect_parse(
      p, two, "",
      {call(0, "get_weather", kWeather), call(1, "deep", kNested), call(2, "u", kUnicode)});
  // Text before the tag is content.
  expect_parse(p, "Let me look. <|python_tag|>" + w, "Let me look. ",
               {call(0, "get_weather", kWeather)});
  expect_no_leak(p, "Let me look. <|python_tag|>" + w, "Let me look. ");
  // Not calls: content, as written.
  for (const std::string& s :
       {std::string("Hello there, {\"name\": \"x\", \"parameters\": {}}"),
        std::string("{\"answer\": 42}"),
        std::string("{\"name\": \"f\", \"parameters\": {\"a\": 1}"),
        std::string("<|python_tag|>brave_search.call(query=\"x\")"),
        std::string("<|python_tag|>{\"name\": \"f\", \"parameters\": 3}"), w + " and more",
        std::string("{\"name\": \"f\", \"parameters\": {}, \"extra\": 1}"), std::string("{}")})
    expect_parse(p, s, s, {});
  expect_parse(p, "", "", {});
  expect_parse(p, "plain text < | > { }", "plain text < | > { }", {});
}

TEST(ToolCallParser, HermesAndQwen) {
  const auto p = format(ToolCallFormat::Hermes);
  const auto block = [](const std::string& name, const json& args) {
    return "<tool_call>\n" + json{{"name", name}, {"arguments", args}}.dump() + "\n</tool_call>";
  };
  expect_parse(p, block("get_weather", kWeather), "", {call(0, "get_weather", kWeather)});
  const std::string text = "I will call two.\n" + block("get_weather", kWeather) + "\n" +
                           block("deep", kNested) + block("u", kUnicode);
  expect_parse(
      p, text, "I will call two.\n\n",
      {call(0, "get_weather", kWeather), call(1, "deep", kNested), call(2, "u", kUnicode)});
  expect_no_leak(p, text, "I will call two.\n\n");
  // A closing tag the model never wrote, after complete JSON.
  expect_parse(p, "<tool_call>" + json{{"name", "f"}, {"arguments", kWeather}}.dump(), "",
               {call(0, "f", kWeather)});
  // Arguments as a string holding JSON (some fine-tunes write them so).
  expect_parse(p, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", "",
               {call(0, "f", {{"a", 1}})});
  // A block that does not parse stays content, a good one beside it is still a call.
  const std::string broken = "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>";
  expect_parse(p, broken + block("g", kWeather), broken, {call(0, "g", kWeather)});
  for (const std::string& s :
       {std::string("<tool_call>not json</tool_call> after"), std::string("<tool_cal> x"),
        std::string("a <tool_call>{\"name\": \"f\""), std::string("<tool_call>[1, 2]</tool_call>"),
        std::string("</tool_call> <tool_call")})
    expect_parse(p, s, s, {});
}

TEST(ToolCallParser, Mistral) {
  const auto p = format(ToolCallFormat::Mistral);
  const json list = {{{"name", "get_weather"}, {"arguments", kWeather}},
                     {{"name", "deep"}, {"arguments", kNested}},
                     {{"name", "u"}, {"arguments", kUnicode}}};
  expect_parse(
      p, "[TOOL_CALLS]" + list.dump(), "",
      {call(0, "get_weather", kWeather), call(1, "deep", kNested), call(2, "u", kUnicode)});
  expect_parse(
      p, "Sure. [TOOL_CALLS] " + list.dump(), "Sure. ",
      {call(0, "get_weather", kWeather), call(1, "deep", kNested), call(2, "u", kUnicode)});
  expect_no_leak(p, "Sure. [TOOL_CALLS] " + list.dump(), "Sure. ");
  expect_parse(p, "[TOOL_CALLS]" + list[0].dump(), "", {call(0, "get_weather", kWeather)});
  // Tokenizer v11 and later: name[ARGS]arguments for each call.
  const std::string v11 = "Sure. [TOOL_CALLS]get_weather[ARGS]" + kWeather.dump() +
                          "[TOOL_CALLS]deep[ARGS] " + kNested.dump();
  expect_parse(p, v11, "Sure. ", {call(0, "get_weather", kWeather), call(1, "deep", kNested)});
  expect_no_leak(p, v11, "Sure. ");
  for (const std::string& s :
       {std::string("[TOOL_CALLS][{\"name\": \"f\"}]"), std::string("[TOOL_CALLS] nothing"),
        std::string("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}"),
        std::string("[TOOL_CALLS][]"), std::string("[TOOL_CALL] [1]"), std::string("[1, 2]"),
        std::string("[TOOL_CALLS]f[ARGS]"), std::string("[TOOL_CALLS]f[ARGS][1]"),
        std::string("[TOOL_CALLS]two words[ARGS]{}"), std::string("[TOOL_CALLS]f[ARGS]{} tail")})
    expect_parse(p, s, s, {});
}

TEST(ToolCallParser, ForcedToolChoices) {
  const auto req = forced(ToolCallParsing::Kind::Required);
  const json two = {{{"name", "get_weather"}, {"parameters", kWeather}},
                    {{"name", "u"}, {"parameters", kUnicode}}};
  expect_parse(req, two.dump(), "", {call(0, "get_weather", kWeather), call(1, "u", kUnicode)});
  expect_no_leak(req, two.dump(), "");
  // Cut short by max_tokens: what there is stays content.
  const std::string cut = two.dump().substr(0, 30);
  expect_parse(req, cut, cut, {});
  expect_parse(req, "[]", "[]", {});
  const auto named = forced(ToolCallParsing::Kind::Named, "get_weather");
  expect_parse(named, " " + kNested.dump(), "", {call(0, "get_weather", kNested)});
  expect_parse(named, "{\"city\": ", "{\"city\": ", {});
  expect_parse(named, "[1]", "[1]", {});
}

TEST(ToolCallParser, WithoutParallelToolCallsOnlyTheFirstCallIsKept) {
  auto p = format(ToolCallFormat::Llama3Json);
  p.parallel = false;
  const std::string w = json{{"name", "a"}, {"parameters", kWeather}}.dump();
  const std::string v = json{{"name", "b"}, {"parameters", kNested}}.dump();
  expect_parse(p, w + ";" + v, "", {call(0, "a", kWeather)});
}

// A model may write anything: a hundred thousand brackets, or a call that never ends, are content
// (and settle in linear time: the whole output is not searched again for every piece).
TEST(ToolCallParser, HostileOutputsStayContent) {
  const std::string deep =
      "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(100000, '[') +
      std::string(100000, ']') + "}</tool_call>";
  EXPECT_EQ(run(format(ToolCallFormat::Hermes), deep, {4096}).content, deep);
  const std::string deep_llama = "{\"name\": \"f\", \"parameters\": " + std::string(100000, '{') +
                                 std::string(100000, '}') + "}";
  EXPECT_EQ(run(format(ToolCallFormat::Llama3Json), deep_llama, {4096}).content, deep_llama);
  // 512 KiB of content in 2-byte pieces (searching all of it for each piece would take minutes).
  const std::string long_text(512 << 10, 'a');
  for (auto f : {ToolCallFormat::Llama3Json, ToolCallFormat::Hermes, ToolCallFormat::Mistral})
    EXPECT_EQ(run(format(f), long_text, {2}).content.size(), long_text.size());
}

TEST(ToolCallParser, CallIds) {
  const std::string id = new_tool_call_id(false);
  EXPECT_EQ(id.size(), 29u);
  EXPECT_TRUE(id.starts_with("call_")) << id;
  EXPECT_NE(id, new_tool_call_id(false));
  const std::string mistral = new_tool_call_id(true);
  EXPECT_EQ(mistral.size(), 9u);
  for (char c : mistral) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << mistral;
}

TEST(ToolCallParser, JsonContainerEndSkipsBracketsInStrings) {
  const std::string s = R"({"a": "}]\"{", "b": [1, {"c": "]"}]} tail)";
  EXPECT_EQ(json_container_end(s, 0), s.size() - 5);
  EXPECT_EQ(json_container_end("{\"a\": [1, 2}", 0), std::string::npos);
  EXPECT_EQ(json_container_end("x{}", 0), std::string::npos);
  // Deeper than any call needs: not a call (a random model's "[[[[..." never reaches a
  // recursive parser).
  EXPECT_EQ(json_container_end(
                std::string(kMaxCallJsonDepth, '[') + std::string(kMaxCallJsonDepth, ']'), 0),
            2u * kMaxCallJsonDepth);
  EXPECT_EQ(
      json_container_end(
          std::string(kMaxCallJsonDepth + 1, '[') + std::string(kMaxCallJsonDepth + 1, ']'), 0),
      std::string::npos);
  EXPECT_EQ(partial_marker_start("abc<tool_", "<tool_call>"), 3u);
  EXPECT_EQ(partial_marker_start("abc<tool_call>", "<tool_call>"), std::string::npos);
}

TEST(SpecialTextFilter, DropsSpecialTokenTextsAcrossPieces) {
  const std::vector<std::string> texts = {"</s>", "<|eot_id|>", "<|reserved_special_token_7|>"};
  for (size_t n = 1; n <= 9; ++n) {
    SpecialTextFilter f(texts);
    const std::string in = "a<|eot_id|>b<|reserved_special_token_7|></s>c < |d <|eo";
    std::string out;
    for (size_t pos = 0; pos < in.size(); pos += n) out += f.push(in.substr(pos, n));
    out += f.flush();
    EXPECT_EQ(out, "abc < |d <|eo") << n;
  }
}

}  // namespace
}  // namespace sandwich::server
