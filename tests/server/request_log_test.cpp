// The log's serving lines: one per finished request, and the engine's periodic line.
#include "request_log.h"

#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <thread>

#include "command.h"
#include "http_test_client.h"

namespace sandwich::server {
namespace {

TEST(RequestLog, LineHasTokensLatenciesAndFinish) {
  RequestRecord r;
  r.id = "cmpl-1";
  r.prompt_tokens = 12;
  r.output_tokens = 11;
  r.ttft_seconds = 0.0123;
  r.e2e_seconds = 0.1123;
  r.finish_reason = "stop";
  EXPECT_EQ(request_log_message(r),
            "cmpl-1 finished: status 200, prompt 12 tokens, output 11 tokens, TTFT 12.3 ms, "
            "TPOT 10.00 ms, E2E 112.3 ms, finish stop");
  r.status = 408;
  r.output_tokens = 1;
  r.finish_reason = "abort";
  EXPECT_EQ(request_log_message(r),
            "cmpl-1 finished: status 408, prompt 12 tokens, output 1 tokens, TTFT 12.3 ms, "
            "TPOT -, E2E 112.3 ms, finish abort");
  r.ttft_seconds.reset();
  EXPECT_NE(request_log_message(r).find("TTFT -, TPOT -"), std::string::npos);
}

TEST(RequestLog, EngineLineOnlyWhenSomethingRan) {
  engine::SchedulerStats a, b;
  b.kv_blocks_total = 200;
  EXPECT_EQ(engine_stats_message(a, b, 10), std::nullopt);
  b.prompt_tokens = 500;
  b.generation_tokens = 120;
  b.running = 2;
  b.waiting = 1;
  b.kv_blocks_used = 25;
  EXPECT_EQ(engine_stats_message(a, b, 10),
            "prompt throughput 50.0 tokens/s, generation throughput 12.0 tokens/s, running 2, "
            "waiting 1, KV cache usage 12.5%");
  b.prefix_cache_queries = 400;
  b.prefix_cache_hits = 100;
  EXPECT_EQ(engine_stats_message(a, b, 10),
            "prompt throughput 50.0 tokens/s, generation throughput 12.0 tokens/s, running 2, "
            "waiting 1, KV cache usage 12.5%, prefix cache hit rate 25.0%");
  a = b;
  b.running = b.waiting = 0;
  EXPECT_EQ(engine_stats_message(a, b, 10), std::nullopt);  // idle since the last line
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RequestLog, SandwichdLogsEachRequestAndTheEngineWhileItWorks) {
  SANDWICH_REQUIRE_DATA();
  test::Daemon d(test::stories_daemon_args() + " --log-interval 0.2");
  ASSERT_NE(d.port(), 0);
  test::Client c(d.port());
  const auto r = c.post("/v1/completions", {{"model", "stories"},
                                            {"prompt", "Once upon a time"},
                                            {"max_tokens", 5},
                                            {"ignore_eos", true}});
  ASSERT_EQ(r.status, 200);
  const std::string id = r.j()["id"];
  EXPECT_EQ(
      c.post("/v1/chat/completions", {{"model", "nope"}, {"messages", test::json::array()}}).status,
      404);  // refused before the engine: no "finished" line (an access line)
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const std::string log = d.log();
  static const std::regex line(
      R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO request: (cmpl-\w+) finished: status 200, )"
      R"(prompt (\d+) tokens, output 5 tokens, TTFT [\d.]+ ms, TPOT [\d.]+ ms, E2E [\d.]+ ms, )"
      R"(finish length\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, line)) << log;
  EXPECT_EQ(m[1], id);
  EXPECT_EQ(count(log, " finished: "), 1u) << log;
  EXPECT_GE(count(log, " INFO engine: prompt throughput "), 1u) << log;
  EXPECT_NE(log.find(" INFO sandwichd: listening on http://"), std::string::npos) << log;
  // Idle: no more engine lines.
  const size_t lines = count(d.log(), "engine: ");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(count(d.log(), "engine: "), lines) << d.log();
}

// Every request gets an access line, the refused ones too (they never reach the engine, so the
// "finished" line alone left them out); fields no parser read get one warning per request.
TEST(RequestLog, EveryRequestHasAnAccessLineAndIgnoredFieldsAWarning) {
  SANDWICH_REQUIRE_DATA();
  test::Daemon d(test::stories_daemon_args() + " --log-level debug");
  ASSERT_NE(d.port(), 0);
  test::Client c(d.port());
  const auto ok = c.post("/v1/completions", {{"model", "stories"},
                                             {"prompt", "Once"},
                                             {"max_tokens", 2},
                                             {"frobnicate", 1},
                                             {"top_a", 0.5},
                                             {"user", "known, no effect"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(
      c.post("/v1/chat/completions", {{"model", "nope"}, {"messages", test::json::array()}}).status,
      404);
  EXPECT_EQ(c.post("/v1/completions", {{"prompt", "x"}, {"max_tokens", -3}}).status, 400);
  EXPECT_EQ(c.get("/v1/nothing").status, 404);
  EXPECT_EQ(c.get("/health").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string log = d.log();
  const std::string id = ok.j()["id"];
  EXPECT_EQ(count(log, " WARNING request: " + id +
                           ": The following fields were present in the request but ignored: "
                           "{'frobnicate', 'top_a'}\n"),
            1u)
      << log;
  EXPECT_EQ(count(log, "but ignored"), 1u) << log;
  for (const char* line :
       {" INFO http: POST /v1/completions 200 ", " INFO http: POST /v1/chat/completions 404 ",
        " INFO http: POST /v1/completions 400 ", " INFO http: GET /v1/nothing 404 ",
        " DEBUG http: GET /health 200 "}) {
    static const std::regex ms(R"([\d.]+ ms\n)");
    const size_t at = log.find(line);
    ASSERT_NE(at, std::string::npos) << line << " in\n" << log;
    EXPECT_TRUE(std::regex_search(log.substr(at + std::strlen(line)), ms,
                                  std::regex_constants::match_continuous))
        << log.substr(at, 100);
  }
}

TEST(RequestLog, LogFlagsAreChecked) {
  const std::string bin = (test::bin_dir() / "sandwichd").string();
  test::expect_one_line_error(test::run_command(bin + " --model x --log-level loud"),
                              "--log-level must be debug, info, warning or error, got 'loud'");
  test::expect_one_line_error(test::run_command(bin + " --model x --log-interval -1"),
                              "--log-interval must not be negative");
}

}  // namespace
}  // namespace sandwich::server
