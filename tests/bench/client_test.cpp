// The benchmark client against the scripted fake server: measured timings, token counts,
// concurrency, arrivals, tokenizer styles, and every failure mode counted without a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "bench/arrivals.h"
#include "bench/runner.h"
#include "bench/server_api.h"
#include "fake_openai_server.h"

namespace sandwich::bench {
namespace {

using test::FakeOpenAiServer;
using test::FakeScript;
using test::FakeTokenizer;
using json = nlohmann::json;

const double kInf = std::numeric_limits<double>::infinity();
// Wall-clock slack for a loaded 2-core machine (other tests, builds): measured times never come
// early, but may come late by a scheduling delay or two.
const double kLate = 0.075;

RunOptions options_for(const FakeOpenAiServer& s, int concurrency = 0) {
  RunOptions o;
  o.url = Url::parse(s.url());
  o.model = "fake-model";
  o.max_concurrency = concurrency;
  o.timeout_s = 10;
  return o;
}

std::vector<BenchRequest> requests(int n, int max_tokens = 5, int first_max_tokens = -1) {
  std::vector<BenchRequest> v;
  for (int i = 0; i < n; ++i) {
    const int out = i == 0 && first_max_tokens > 0 ? first_max_tokens : max_tokens;
    v.push_back({"salt" + std::to_string(i) + " a b c", 5, 5, out});
  }
  return v;
}

// Most requests in flight at once, as the client saw them (an end and a start at the same
// instant do not overlap: the slot was freed first).
int max_overlap(const std::vector<RequestRecord>& recs) {
  std::vector<std::pair<double, int>> ev;
  for (const auto& r : recs) {
    ev.push_back({r.start_s, +1});
    ev.push_back({r.end_s, -1});
  }
  std::sort(ev.begin(), ev.end());
  int cur = 0, most = 0;
  for (const auto& [t, d] : ev) most = std::max(most, cur += d);
  return most;
}

std::vector<RequestRecord> run(HttpClient& c, const RunOptions& o,
                               const std::vector<BenchRequest>& q, double rate = kInf) {
  return run_requests(c, o, q, arrival_times(static_cast<int>(q.size()), rate, 1, 0));
}

TEST(BenchClient, MeasuresScriptedTtftItlTpotAndE2e) {
  FakeOpenAiServer server;
  FakeScript s;
  s.ttft_s = 0.060;
  s.gaps_s = {0.020, 0.030, 0.020, 0.040};
  server.set_script(s);
  HttpClient client;
  const auto recs = run(client, options_for(server, 1), requests(3, 5));
  ASSERT_EQ(recs.size(), 3u);
  for (const auto& r : recs) {
    ASSERT_TRUE(r.ok) << r.error_kind << ": " << r.error_message;
    const RequestMetrics m = request_metrics(r);
    EXPECT_EQ(m.output_tokens, 5);
    EXPECT_EQ(m.prompt_tokens, 5);  // the fake's usage: BOS + 4 words
    ASSERT_EQ(r.chunk_s.size(), 5u);
    EXPECT_GE(m.ttft_s, 0.060);
    EXPECT_LE(m.ttft_s, 0.060 + kLate);
    ASSERT_EQ(m.itl_s.size(), 4u);
    // Each gap is the scripted sleep (a late chunk lengthens its gap and shortens the next).
    double sum = 0;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(m.itl_s[i], s.gaps_s[i], kLate) << i;
      sum += m.itl_s[i];
    }
    // The gaps run from the first chunk, so only the first chunk's lateness can shorten them.
    EXPECT_GE(sum, 0.110 - (m.ttft_s - 0.060) - 0.002);
    EXPECT_GE(m.e2el_s, 0.170);
    EXPECT_LE(m.e2el_s, 0.170 + 2 * kLate);
    EXPECT_DOUBLE_EQ(*m.tpot_s, (m.e2el_s - m.ttft_s) / 4);
    EXPECT_NEAR(*m.tpot_s, 0.110 / 4, kLate / 4 + 0.002);
  }
  // One at a time: each request starts after the previous one ended.
  EXPECT_GE(recs[1].start_s, recs[0].end_s);
  EXPECT_GE(recs[2].start_s, recs[1].end_s);
  EXPECT_EQ(max_overlap(recs), 1);
}

TEST(BenchClient, SendsTheSameLengthsToEveryServer) {
  FakeOpenAiServer server;
  server.set_script(test::timed(0, 0));
  HttpClient client;
  auto q = requests(2, 7);
  q[1].max_tokens = 11;
  const auto recs = run(client, options_for(server), q);
  const auto got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  for (const auto& r : got) {
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.body["model"], "fake-model");
    EXPECT_EQ(r.body["ignore_eos"], true);
    EXPECT_EQ(r.body["stream"], true);
    EXPECT_EQ(r.body["stream_options"]["include_usage"], true);
    const int want = r.body["prompt"] == q[0].prompt ? 7 : 11;
    EXPECT_EQ(r.body["max_tokens"], want);
  }
  EXPECT_EQ(recs[1].usage_completion_tokens, 11);
}

TEST(BenchClient, TokenCountsFromUsageElseFromChunks) {
  FakeOpenAiServer server;
  HttpClient client;
  server.set_script([] {
    auto s = test::timed(0.001, 0.001);
    s.tokens_per_chunk = 2;
    return s;
  }());
  auto r = run(client, options_for(server), requests(1, 6))[0];
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.chunk_s.size(), 3u);
  EXPECT_EQ(request_metrics(r).output_tokens, 6);
  EXPECT_EQ(request_metrics(r).itl_s.size(), 2u);
  server.set_script([] {
    auto s = test::timed(0.001, 0.001);
    s.usage = false;
    return s;
  }());
  r = run(client, options_for(server), requests(1, 4))[0];
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_FALSE(r.usage_completion_tokens);
  EXPECT_EQ(request_metrics(r).output_tokens, 4);
  EXPECT_EQ(request_metrics(r).prompt_tokens, 5);  // what the client built
}

TEST(BenchClient, MaxConcurrencyBoundsRequestsInFlight) {
  FakeOpenAiServer server;
  server.set_script(test::timed(0.030, 0.005));
  HttpClient client;
  auto recs = run(client, options_for(server, 3), requests(9, 3));
  // The server may briefly see one more: a slot frees when the client has the last byte,
  // before the server's handler has returned.
  EXPECT_EQ(max_overlap(recs), 3);
  EXPECT_LE(server.max_concurrent(), 4);
  for (const auto& r : recs) EXPECT_TRUE(r.ok) << r.error_message;
  // Released at once, the later ones waited for a slot: arrival 0, start later.
  EXPECT_GE(recs[8].start_s, 0.030 * 2);

  FakeOpenAiServer open;
  open.set_script(test::timed(0.100, 0.005));
  recs = run(client, options_for(open), requests(8, 2));
  EXPECT_EQ(max_overlap(recs), 8);
  EXPECT_EQ(open.max_concurrent(), 8);
}

TEST(BenchClient, RequestsLeaveAtTheirArrivalTimes) {
  FakeOpenAiServer server;
  server.set_script(test::timed(0.001, 0.001));
  HttpClient client;
  const auto arrivals = arrival_times(8, 40, 1, 3);
  const auto recs = run_requests(client, options_for(server), requests(8, 2), arrivals);
  const auto got = server.requests();
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].arrival_s, arrivals[i]);
    EXPECT_GE(recs[i].start_s, arrivals[i]);
    EXPECT_LE(recs[i].start_s, arrivals[i] + kLate);
  }
  // The server saw the same spacing.
  for (size_t i = 1; i < got.size(); ++i) {
    const double seen = std::chrono::duration<double>(got[i].at - got[0].at).count();
    EXPECT_NEAR(seen, arrivals[i], kLate) << i;
  }
}

TEST(BenchClient, HttpErrorsAreCountedPerRequest) {
  FakeOpenAiServer server;
  server.set_script([](const json& body, int) {
    FakeScript s;
    s.ttft_s = s.itl_s = 0.001;
    if (body["max_tokens"] == 7) s.status = 500;
    if (body["max_tokens"] == 8) s.status = 429;
    return s;
  });
  HttpClient client;
  auto q = requests(4, 3);
  q[1].max_tokens = 7;
  q[2].max_tokens = 8;
  const auto recs = run(client, options_for(server), q);
  EXPECT_TRUE(recs[0].ok);
  EXPECT_TRUE(recs[3].ok);
  EXPECT_EQ(recs[1].error_kind, "http") << recs[1].error_message;
  EXPECT_EQ(recs[1].http_status, 500);
  EXPECT_NE(recs[1].error_message.find("scripted failure"), std::string::npos);
  EXPECT_EQ(recs[2].http_status, 429);
  const Summary s = summarize(recs, {1000, 1000}, 1);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.errors.at("http"), 2);
}

TEST(BenchClient, RefusedConnectionsAreCounted) {
  uint16_t port;
  {
    FakeOpenAiServer gone;
    port = gone.port();
  }
  RunOptions o;
  o.url = Url::parse("http://127.0.0.1:" + std::to_string(port));
  HttpClient client;
  const auto recs = run(client, o, requests(3), 100);
  for (const auto& r : recs) {
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error_kind, "connect") << r.error_message;
  }
  const Summary s = summarize(recs, {1000, 1000}, 1);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.attainment, 0);
}

TEST(BenchClient, ServerDyingMidRunIsCountedNotCrashedOn) {
  FakeOpenAiServer server;
  server.set_script([] {
    auto s = test::timed(0.010, 0.050);
    s.tokens = 20;
    return s;
  }());
  HttpClient client;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    server.kill();
  });
  const auto recs = run(client, options_for(server, 2), requests(6, 20));
  killer.join();
  const Summary s = summarize(recs, {1000, 1000}, 1);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.errors.at("disconnected"), 2);  // the two in flight, cut mid-stream
  EXPECT_EQ(s.errors.at("connect"), 4);       // the rest found nobody listening
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(recs[static_cast<size_t>(i)].chunk_s.empty());
}

TEST(BenchClient, TimeoutsDropsAndBrokenStreamsAreClassified) {
  FakeOpenAiServer server;
  server.set_script([](const json& body, int) {
    FakeScript s;
    s.ttft_s = s.itl_s = 0.002;
    switch (body["max_tokens"].get<int>()) {
      case 1:
        s.hang = true;
        break;
      case 2:
        s.drop_after_chunks = 2;
        break;
      case 3:
        s.error_event = true;
        break;
      case 4:
        s.garbage_event = true;
        break;
      case 5:
        s.not_sse = true;
        break;
      case 6:
        s.done = s.finish_reason = false;
        break;
      case 7:
        break;  // fine
    }
    return s;
  });
  HttpClient client;
  std::vector<BenchRequest> q;
  for (int i = 1; i <= 7; ++i) q.push_back({"p " + std::to_string(i), 3, 3, i});
  RunOptions o = options_for(server);
  o.timeout_s = 0.3;
  const auto recs = run(client, o, q);
  const std::vector<std::string> kinds = {
      "timeout", "disconnected", "stream_error", "protocol", "protocol", "incomplete", ""};
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].error_kind, kinds[i]) << i << ": " << recs[i].error_message;
    EXPECT_EQ(recs[i].ok, kinds[i].empty());
  }
  EXPECT_GE(recs[0].end_s - recs[0].start_s, 0.3);
  EXPECT_LE(recs[0].end_s - recs[0].start_s, 0.3 + kLate);
  EXPECT_EQ(recs[1].chunk_s.size(), 2u);  // what arrived before the cut is kept
}

TEST(BenchClient, ChatStreamsCountContentNotTheRoleChunk) {
  FakeOpenAiServer server;
  server.set_script(test::timed(0.050, 0.005));
  HttpClient client;
  RunOptions o = options_for(server);
  o.api = Api::Chat;
  const auto r = run(client, o, requests(1, 4))[0];
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(server.requests()[0].path, "/v1/chat/completions");
  EXPECT_EQ(r.chunk_s.size(), 4u);
  EXPECT_GE(request_metrics(r).ttft_s, 0.050);  // the role chunk came at once and is no token
}

TEST(BenchServerApi, ModelAndContextFromTheServer) {
  FakeOpenAiServer server(FakeOpenAiServer::Options().with_model("m1", 1234));
  HttpClient client;
  ServerInfo info = probe_server(client, Url::parse(server.url()), "", 5);
  EXPECT_EQ(info.model, "m1");
  EXPECT_EQ(info.max_model_len, 1234);
  EXPECT_TRUE(info.error.empty()) << info.error;
  FakeOpenAiServer bare(FakeOpenAiServer::Options().without_models_route());
  info = probe_server(client, Url::parse(bare.url()), "", 5);
  EXPECT_EQ(info.model, "");
  EXPECT_FALSE(info.max_model_len);
  EXPECT_NE(info.error.find("404"), std::string::npos);
  uint16_t port;
  {
    FakeOpenAiServer gone;
    port = gone.port();
  }
  info = probe_server(client, Url::parse("http://127.0.0.1:" + std::to_string(port)), "", 5);
  EXPECT_FALSE(info.error.empty());
}

TEST(BenchServerApi, BothTokenizerStylesBuildExactPrompts) {
  for (auto [style, name, bytes] : {std::tuple{FakeTokenizer::Vllm, "vllm", 0},
                                    std::tuple{FakeTokenizer::LlamaCpp, "llama.cpp", 0},
                                    std::tuple{FakeTokenizer::Vllm, "vllm", 4},
                                    std::tuple{FakeTokenizer::LlamaCpp, "llama.cpp", 3}}) {
    FakeOpenAiServer server(FakeOpenAiServer::Options().with_tokenizer(style, bytes));
    HttpClient client;
    RemoteTokenizer tok(client, Url::parse(server.url()), "fake-model", Api::Completions, "", 5);
    EXPECT_EQ(name_of(tok.probe(), kTokenizerStyleNames), name);
    PromptBuilder b(tok, 0);
    for (int n : {4, 33, 300}) {
      const BuiltPrompt p = b.build(n, n);
      EXPECT_TRUE(p.exact) << name << " " << n;
      EXPECT_EQ(server.count(p.text), n) << name << " " << bytes;
    }
  }
  FakeOpenAiServer none(FakeOpenAiServer::Options().with_tokenizer(FakeTokenizer::None));
  HttpClient client;
  RemoteTokenizer tok(client, Url::parse(none.url()), "", Api::Completions, "", 5);
  EXPECT_EQ(tok.probe(), TokenizerStyle::None);
}

TEST(BenchServerApi, ChatPromptsCountTheTemplateWhenTheServerCan) {
  FakeOpenAiServer server(FakeOpenAiServer::Options().with_chat_template_tokens(5));
  HttpClient client;
  RemoteTokenizer tok(client, Url::parse(server.url()), "fake-model", Api::Chat, "", 5);
  ASSERT_EQ(tok.probe(), TokenizerStyle::Vllm);
  EXPECT_TRUE(tok.counts_template());
  PromptBuilder b(tok, 0);
  const BuiltPrompt p = b.build(0, 40);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(server.count(p.text) + 5, 40);
}

}  // namespace
}  // namespace sandwich::bench
