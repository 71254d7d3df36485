// The benchmark client's reading of responses: SSE framing and OpenAI stream semantics,
// the request body it sends, and endpoint URLs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/openai_client.h"
#include "bench/serve.h"
#include "bench/sse.h"

namespace sandwich::bench {
namespace {

using json = nlohmann::json;

std::vector<std::string> events_of(const std::vector<std::string>& pieces, bool finish = true) {
  SseParser p;
  std::vector<std::string> out;
  auto on = [&](const std::string& d) { out.push_back(d); };
  for (const auto& piece : pieces) p.feed(piece, on);
  if (finish) p.finish(on);
  return out;
}

TEST(BenchSse, EventsLinesCommentsAndFields) {
  EXPECT_EQ(events_of({"data: a\n\ndata: b\n\n"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(events_of({"data: x\ndata: y\n\n"}), (std::vector<std::string>{"x\ny"}));
  EXPECT_EQ(events_of({": keep-alive\n\nevent: message\nid: 7\ndata:tight\n\n"}),
            (std::vector<std::string>{"tight"}));
  EXPECT_EQ(events_of({"data:  two spaces\n\n"}), (std::vector<std::string>{" two spaces"}));
  EXPECT_EQ(events_of({"data\n\n"}), (std::vector<std::string>{""}));
  EXPECT_EQ(events_of({"retry: 10\n\n\n\n"}), (std::vector<std::string>{}));
}

TEST(BenchSse, CrLfAndCrEndLinesEvenSplitBetweenReads) {
  EXPECT_EQ(events_of({"data: a\r\n\r\ndata: b\r\r"}), (std::vector<std::string>{"a", "b"}));
  // The CR of a CRLF at the end of one read and its LF at the start of the next are one line end.
  EXPECT_EQ(events_of({"data: a\r", "\n", "data: b\r\n\r", "\n"}, false),
            (std::vector<std::string>{"a\nb"}));
}

TEST(BenchSse, AnySplitOfAStreamGivesTheSameEvents) {
  const std::string s =
      "data: {\"choices\":[{\"text\":\" Hello\"}]}\r\n\r\n: ping\n\ndata: "
      "{\"choices\":[{\"text\":\"!\"}]}\n\ndata: [DONE]\n\n";
  const auto whole = events_of({s});
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole.back(), "[DONE]");
  for (size_t cut = 0; cut <= s.size(); ++cut)
    EXPECT_EQ(events_of({s.substr(0, cut), s.substr(cut)}), whole) << cut;
  std::vector<std::string> bytes;
  for (char c : s) bytes.push_back(std::string(1, c));
  EXPECT_EQ(events_of(bytes), whole);
}

TEST(BenchSse, FinishDeliversAnEventMissingItsBlankLine) {
  EXPECT_EQ(events_of({"data: [DONE]\n"}), (std::vector<std::string>{"[DONE]"}));
  EXPECT_EQ(events_of({"data: [DONE]"}), (std::vector<std::string>{"[DONE]"}));
  EXPECT_EQ(events_of({"data: [DONE]"}, false), (std::vector<std::string>{}));
}

std::string ev(const json& j) {
  return "data: " + j.dump() + "\n\n";
}
std::string text_chunk(const std::string& t, bool last = false) {
  return ev(
      {{"choices",
        {{{"index", 0}, {"text", t}, {"finish_reason", last ? json("length") : json(nullptr)}}}}});
}
std::string chat_chunk(const json& delta) {
  return ev({{"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}}}}});
}
std::string usage(int p, int c) {
  return ev({{"choices", json::array()},
             {"usage", {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c}}}});
}
HttpEnd ok_end() {
  return HttpEnd{"", "", 200, ""};
}

TEST(BenchOpenAiStream, CompletionChunksTimestampsAndUsage) {
  RequestRecord r;
  OpenAiStreamReader reader(r);
  reader.on_bytes(text_chunk(" a"), 0.25);
  reader.on_bytes(text_chunk(" b") + text_chunk(" c", true),
                  0.5);  // two chunks in one read: same time
  reader.on_bytes(usage(5, 3) + "data: [DONE]\n\n", 0.625);
  reader.on_end(ok_end(), 0.75);
  EXPECT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.chunk_s, (std::vector<double>{0.25, 0.5, 0.5}));
  EXPECT_EQ(r.usage_prompt_tokens, 5);
  EXPECT_EQ(r.usage_completion_tokens, 3);
  EXPECT_DOUBLE_EQ(r.end_s, 0.75);
}

TEST(BenchOpenAiStream, ChatRoleChunkAndEmptyTextAreNoTokens) {
  RequestRecord r;
  OpenAiStreamReader reader(r);
  reader.on_bytes(chat_chunk({{"role", "assistant"}, {"content", ""}}), 0.125);
  reader.on_bytes(chat_chunk({{"content", "Hi"}}), 0.25);
  reader.on_bytes(chat_chunk({{"content", nullptr}}) + text_chunk(""), 0.3);
  reader.on_bytes(
      ev({{"choices", {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}}}}),
      0.4);
  reader.on_end(ok_end(), 0.5);  // no [DONE], but a finish_reason: complete
  EXPECT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.chunk_s, (std::vector<double>{0.25}));
}

TEST(BenchOpenAiStream, OnlyTheFirstChoiceCounts) {
  RequestRecord r;
  OpenAiStreamReader reader(r);
  reader.on_bytes(ev({{"choices", {{{"index", 1}, {"text", "other"}}}}}), 0.1);
  reader.on_bytes(text_chunk("x", true) + "data: [DONE]\n\n", 0.2);
  reader.on_end(ok_end(), 0.2);
  EXPECT_EQ(r.chunk_s, (std::vector<double>{0.2}));
}

struct Failure {
  std::string stream;
  HttpEnd end;
  std::string kind;
};

TEST(BenchOpenAiStream, FailuresAreClassified) {
  const std::vector<Failure> cases = {
      {text_chunk("a"), ok_end(), "incomplete"},
      {text_chunk("a") + ev({{"error", {{"message", "engine died"}}}}) + "data: [DONE]\n\n",
       ok_end(), "stream_error"},
      {text_chunk("a") + "data: {oops\n\ndata: [DONE]\n\n", ok_end(), "protocol"},
      {"", HttpEnd{"", "", 200, ""}, "protocol"},  // 200 without events
      {"data: [DONE]\n\n", ok_end(), "no_output"},
      {text_chunk("a"), HttpEnd{"disconnected", "eof", 200, ""}, "disconnected"},
      {"", HttpEnd{"connect", "refused", 0, ""}, "connect"},
      {"", HttpEnd{"timeout", "timed out", 200, ""}, "timeout"},
  };
  for (const auto& c : cases) {
    RequestRecord r;
    OpenAiStreamReader reader(r);
    reader.on_bytes(c.stream, 0.1);
    reader.on_end(c.end, 0.2);
    EXPECT_FALSE(r.ok) << c.stream;
    EXPECT_EQ(r.error_kind, c.kind) << c.stream << " -> " << r.error_message;
    EXPECT_FALSE(r.error_message.empty());
    EXPECT_DOUBLE_EQ(r.end_s, 0.2);
  }
}

TEST(BenchOpenAiStream, HttpErrorKeepsStatusAndServerMessage) {
  RequestRecord r;
  OpenAiStreamReader reader(r);
  reader.on_end(
      HttpEnd{"", "", 429, R"({"error":{"message":"queue full","type":"rate_limit_error"}})"},
      0.01);
  EXPECT_EQ(r.error_kind, "http");
  EXPECT_EQ(r.http_status, 429);
  EXPECT_NE(r.error_message.find("queue full"), std::string::npos);
  RequestRecord r2;
  OpenAiStreamReader reader2(r2);
  reader2.on_end(HttpEnd{"", "", 502, "<html>bad gateway</html>"}, 0.01);
  EXPECT_NE(r2.error_message.find("bad gateway"), std::string::npos);
}

TEST(BenchOpenAiStream, DoneThenBrokenConnectionIsComplete) {
  RequestRecord r;
  OpenAiStreamReader reader(r);
  reader.on_bytes(text_chunk("a", true) + "data: [DONE]\n\n", 0.1);
  reader.on_end(HttpEnd{"disconnected", "reset", 200, ""}, 0.2);
  EXPECT_TRUE(r.ok);
}

TEST(BenchOpenAiBody, SameLengthsForEveryServer) {
  const json c = json::parse(openai_request_body(Api::Completions, "m", "hello there", 42));
  EXPECT_EQ(c["model"], "m");
  EXPECT_EQ(c["prompt"], "hello there");
  EXPECT_EQ(c["max_tokens"], 42);
  EXPECT_EQ(c["ignore_eos"], true);
  EXPECT_EQ(c["stream"], true);
  EXPECT_EQ(c["stream_options"]["include_usage"], true);
  EXPECT_EQ(c["temperature"], 0);
  const json chat = json::parse(
      openai_request_body(Api::Chat, "", "hi", 7, R"({"top_k": 1, "temperature": 0.5})"));
  EXPECT_FALSE(chat.contains("model"));
  EXPECT_EQ(chat["messages"], json::parse(R"([{"role":"user","content":"hi"}])"));
  EXPECT_EQ(chat["top_k"], 1);
  EXPECT_EQ(chat["temperature"], 0.5);  // the extra body wins
  EXPECT_THROW(openai_request_body(Api::Chat, "", "hi", 7, "[1]"), std::invalid_argument);
  EXPECT_THROW(openai_request_body(Api::Chat, "", "hi", 7, "{bad"), std::invalid_argument);
  EXPECT_EQ(parse_api("chat"), Api::Chat);
  EXPECT_THROW(parse_api("embeddings"), std::invalid_argument);
}

TEST(BenchUrl, ParsesHostPortPrefixAndLabels) {
  Url u = Url::parse("http://127.0.0.1:8000");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.prefix, "");
  u = Url::parse("localhost:9000/api/");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.prefix, "/api");
  EXPECT_EQ(u.str(), "http://localhost:9000/api");
  EXPECT_EQ(Url::parse("http://[::1]:81").host, "::1");
  EXPECT_EQ(Url::parse("http://example").port, 80);
  for (const char* bad :
       {"https://x:1", "ftp://x", "http://:80", "http://x:99999", "http://x:8a", "http://[::1"})
    EXPECT_THROW(Url::parse(bad), std::invalid_argument) << bad;

  Endpoint e = parse_endpoint("sandwich=http://127.0.0.1:8000/v1");
  EXPECT_EQ(e.label, "sandwich");
  EXPECT_EQ(e.url.prefix, "");  // /v1 is where the routes go, not a prefix
  e = parse_endpoint("http://127.0.0.1:8080");
  EXPECT_EQ(e.label, "127.0.0.1:8080");
  EXPECT_THROW(parse_endpoint("=http://x:1"), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::bench
