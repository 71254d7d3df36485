// The completions and chat formats' JSON, byte for byte as clients have been getting it.
#include "wire_format.h"

#include <gtest/gtest.h>

#include "json_response.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

const ResponseHeader kCmpl{"cmpl-a", 7, "m"};
const ResponseHeader kChat{"chatcmpl-a", 7, "m"};
const TokenLogprobText kThere{" there", -0.5f, {{" there", -0.5f}, {" in", -2.0f}}};

std::string chunk(const WireFormat& f, const ResponseHeader& h, const ChoiceDelta& d) {
  return dump_json(f.chunk(h, d));
}

TEST(WireFormat, IdPrefixes) {
  EXPECT_STREQ(completions_format().id_prefix(), "cmpl-");
  EXPECT_STREQ(chat_completions_format().id_prefix(), "chatcmpl-");
}

TEST(WireFormat, CompletionsChunks) {
  const WireFormat& f = completions_format();
  EXPECT_EQ(chunk(f, kCmpl, {0, ",", std::nullopt, std::nullopt}),
            R"({"choices":[{"finish_reason":null,"index":0,"logprobs":null,"text":","}],)"
            R"("created":7,"id":"cmpl-a","model":"m","object":"text_completion"})");
  EXPECT_EQ(chunk(f, kCmpl, {3, "", "length", std::nullopt}),
            R"({"choices":[{"finish_reason":"length","index":3,"logprobs":null,"text":""}],)"
            R"("created":7,"id":"cmpl-a","model":"m","object":"text_completion"})");
}

TEST(WireFormat, CompletionsLogprobsAreParallelLists) {
  const WireFormat& f = completions_format();
  const json entry = f.logprob_entry(kThere, 1);
  EXPECT_EQ(dump_json(entry),
            R"({"logprob":-0.5,"offset":1,"token":" there","top":{" in":-2.0," there":-0.5}})");
  const json second = f.logprob_entry({"!", -1.0f, {}}, 7);
  EXPECT_EQ(chunk(f, kCmpl, {0, " there!", std::nullopt, json::array({entry, second})}),
            R"({"choices":[{"finish_reason":null,"index":0,"logprobs":{"text_offset":[1,7],)"
            R"("token_logprobs":[-0.5,-1.0],"tokens":[" there","!"],"top_logprobs":[{" in":-2.0,)"
            R"(" there":-0.5},{}]},"text":" there!"}],"created":7,"id":"cmpl-a","model":"m",)"
            R"("object":"text_completion"})");
}

TEST(WireFormat, ChatChunks) {
  const WireFormat& f = chat_completions_format();
  // A choice opens with the role alone, as OpenAI's and vLLM's do; the text follows.
  const std::optional<json> opening = f.opening_chunk(kChat, 2);
  ASSERT_TRUE(opening);
  EXPECT_EQ(dump_json(*opening),
            R"({"choices":[{"delta":{"content":"","role":"assistant"},"finish_reason":null,)"
            R"("index":2,"logprobs":null}],"created":7,"id":"chatcmpl-a","model":"m",)"
            R"("object":"chat.completion.chunk"})");
  EXPECT_EQ(chunk(f, kChat, {0, "Hi", std::nullopt, std::nullopt}),
            R"({"choices":[{"delta":{"content":"Hi"},"finish_reason":null,)"
            R"("index":0,"logprobs":null}],"created":7,"id":"chatcmpl-a","model":"m",)"
            R"("object":"chat.completion.chunk"})");
  EXPECT_EQ(chunk(f, kChat, {1, "", std::nullopt, std::nullopt}),
            R"({"choices":[{"delta":{"content":""},"finish_reason":null,"index":1,)"
            R"("logprobs":null}],"created":7,"id":"chatcmpl-a","model":"m",)"
            R"("object":"chat.completion.chunk"})");
  // A last one without text has no content.
  EXPECT_EQ(chunk(f, kChat, {1, "", "stop", std::nullopt}),
            R"({"choices":[{"delta":{},"finish_reason":"stop","index":1,"logprobs":null}],)"
            R"("created":7,"id":"chatcmpl-a","model":"m","object":"chat.completion.chunk"})");
  EXPECT_EQ(chunk(f, kChat, {0, "!", "length", std::nullopt}),
            R"({"choices":[{"delta":{"content":"!"},"finish_reason":"length",)"
            R"("index":0,"logprobs":null}],"created":7,"id":"chatcmpl-a","model":"m",)"
            R"("object":"chat.completion.chunk"})");
}

TEST(WireFormat, CompletionsHaveNoOpeningChunk) {
  EXPECT_FALSE(completions_format().opening_chunk(kCmpl, 0));
}

TEST(WireFormat, ChatLogprobsAreEntriesWithBytes) {
  const WireFormat& f = chat_completions_format();
  const json entry = f.logprob_entry({"\xC3\xA9", -0.25f, {{"\xC3\xA9", -0.25f}, {"e", -3.0f}}}, 9);
  EXPECT_EQ(dump_json(entry),
            "{\"bytes\":[195,169],\"logprob\":-0.25,\"token\":\"\xC3\xA9\",\"top_logprobs\":["
            "{\"bytes\":[195,169],\"logprob\":-0.25,\"token\":\"\xC3\xA9\"},"
            "{\"bytes\":[101],\"logprob\":-3.0,\"token\":\"e\"}]}");
  // Half a character: its bytes are exact, its text a replacement character.
  EXPECT_EQ(dump_json(f.logprob_entry({"\xC3", -1.0f, {}}, 0)),
            "{\"bytes\":[195],\"logprob\":-1.0,\"token\":\"\xEF\xBF\xBD\",\"top_logprobs\":[]}");
  EXPECT_EQ(
      chunk(f, kChat, {0, "e", std::nullopt, json::array({f.logprob_entry({"e", -1.0f, {}}, 0)})}),
      R"({"choices":[{"delta":{"content":"e"},"finish_reason":null,"index":0,"logprobs":)"
      R"({"content":[{"bytes":[101],"logprob":-1.0,"token":"e","top_logprobs":[]}]}}],)"
      R"("created":7,"id":"chatcmpl-a","model":"m","object":"chat.completion.chunk"})");
}

TEST(WireFormat, UsageChunk) {
  EXPECT_EQ(dump_json(completions_format().usage_chunk(kCmpl, {3, 5})),
            R"({"choices":[],"created":7,"id":"cmpl-a","model":"m","object":"text_completion",)"
            R"("usage":{"completion_tokens":5,"prompt_tokens":3,)"
            R"("prompt_tokens_details":{"cached_tokens":0},"total_tokens":8}})");
  EXPECT_EQ(dump_json(chat_completions_format().usage_chunk(kChat, {3, 5, 2})),
            R"({"choices":[],"created":7,"id":"chatcmpl-a","model":"m",)"
            R"("object":"chat.completion.chunk",)"
            R"("usage":{"completion_tokens":5,"prompt_tokens":3,)"
            R"("prompt_tokens_details":{"cached_tokens":2},"total_tokens":8}})");
}

TEST(WireFormat, CompletionsResponse) {
  const WireFormat& f = completions_format();
  EXPECT_EQ(dump_json(f.response(
                kCmpl, {{"a b", "length", std::nullopt}, {"c", "stop", std::nullopt}}, {4, 3})),
            R"({"choices":[{"finish_reason":"length","index":0,"logprobs":null,"text":"a b"},)"
            R"({"finish_reason":"stop","index":1,"logprobs":null,"text":"c"}],"created":7,)"
            R"("id":"cmpl-a","model":"m","object":"text_completion",)"
            R"("usage":{"completion_tokens":3,"prompt_tokens":4,)"
            R"("prompt_tokens_details":{"cached_tokens":0},"total_tokens":7}})");
  // Logprobs asked for: lists, empty when no token came.
  EXPECT_EQ(dump_json(f.response(kCmpl, {{"", "stop", json::array()}}, {1, 0})),
            R"({"choices":[{"finish_reason":"stop","index":0,"logprobs":{"text_offset":[],)"
            R"("token_logprobs":[],"tokens":[],"top_logprobs":[]},"text":""}],"created":7,)"
            R"("id":"cmpl-a","model":"m","object":"text_completion",)"
            R"("usage":{"completion_tokens":0,"prompt_tokens":1,)"
            R"("prompt_tokens_details":{"cached_tokens":0},"total_tokens":1}})");
}

TEST(WireFormat, ChatResponse) {
  const WireFormat& f = chat_completions_format();
  EXPECT_EQ(dump_json(f.response(kChat, {{"Hello", "stop", std::nullopt}}, {2, 1})),
            R"({"choices":[{"finish_reason":"stop","index":0,"logprobs":null,"message":)"
            R"({"content":"Hello","role":"assistant"}}],"created":7,"id":"chatcmpl-a",)"
            R"("model":"m","object":"chat.completion",)"
            R"("usage":{"completion_tokens":1,"prompt_tokens":2,)"
            R"("prompt_tokens_details":{"cached_tokens":0},"total_tokens":3}})");
  EXPECT_EQ(
      dump_json(f.response(kChat, {{"", "length", json::array()}}, {2, 0})),
      R"({"choices":[{"finish_reason":"length","index":0,"logprobs":{"content":[]},"message":)"
      R"({"content":"","role":"assistant"}}],"created":7,"id":"chatcmpl-a","model":"m",)"
      R"("object":"chat.completion","usage":{"completion_tokens":0,"prompt_tokens":2,)"
      R"("prompt_tokens_details":{"cached_tokens":0},"total_tokens":2}})");
}

TEST(WireFormat, ChatToolCalls) {
  const WireFormat& f = chat_completions_format();
  const json calls = json::array({{{"index", 0},
                                   {"id", "call_x"},
                                   {"type", "function"},
                                   {"function", {{"name", "f"}, {"arguments", "{\"a\":1}"}}}}});
  // Content is null beside calls unless the model wrote text too.
  ChoiceResult r{" \n", "tool_calls", std::nullopt, calls};
  EXPECT_EQ(dump_json(f.response(kChat, {r}, {2, 1})["choices"][0]["message"]),
            R"({"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":)"
            R"("{\"a\":1}","name":"f"},"id":"call_x","index":0,"type":"function"}]})");
  r.text = "Sure.";
  EXPECT_EQ(f.response(kChat, {r}, {2, 1})["choices"][0]["message"]["content"], "Sure.");
  EXPECT_EQ(f.response(kChat, {r}, {2, 1})["choices"][0]["finish_reason"], "tool_calls");
  // A chunk with calls has content only when it brings text.
  ChoiceDelta d{0, "", std::nullopt, std::nullopt, calls};
  EXPECT_EQ(dump_json(f.chunk(kChat, d)["choices"][0]["delta"]),
            R"({"tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"f"},"id":"call_x",)"
            R"("index":0,"type":"function"}]})");
  // Without calls, nothing changes.
  EXPECT_FALSE(
      f.response(kChat, {{"Hi", "stop", std::nullopt}}, {2, 1})["choices"][0]["message"].contains(
          "tool_calls"));
}

TEST(WireFormat, ServerSentEvents) {
  EXPECT_EQ(sse_event(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace sandwich::server
