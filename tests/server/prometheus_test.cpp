// The /metrics page, pinned byte for byte for a made-up snapshot: Prometheus scrapers and
// dashboards read these names and this layout. Then the page of a running sandwichd, read by a
// Prometheus text-format parser that checks the exposition rules.
#include "prometheus.h"

#include <gtest/gtest.h>

#include <ctime>

#include "http_test_client.h"
#include "prometheus_parser.h"

namespace sandwich::server {
namespace {

using test::parse_prometheus;
using test::PromPage;

TEST(Prometheus, BeforeTheModelIsLoadedOnlyReadiness) {
  MetricsSnapshot m;
  m.model_name = "m";
  EXPECT_EQ(metrics_text(m),
            "# HELP sandwich:model_ready 1 once the model is loaded\n"
            "# TYPE sandwich:model_ready gauge\n"
            "sandwich:model_ready{model_name=\"m\"} 0\n");
}

TEST(Prometheus, FullPage) {
  MetricsSnapshot m;
  m.model_name = "llama";
  m.model_ready = true;
  m.process = ProcessStats{123456789, 987654321, 12.5, 1764000000, 17, 1024};
  MetricsSnapshot::Engine e;
  engine::SchedulerStats& st = e.stats;
  st.waiting = 3;
  st.running = 5;
  st.kv_blocks_total = 3000;
  st.kv_blocks_used = 1000;
  st.prefill_steps = 12;
  st.decode_steps = 3456789012ull;
  st.prefill_seconds = 1.25;
  st.decode_seconds = 1234.5678901234;
  st.prompt_tokens = 98765;
  st.generation_tokens = 12345678901ull;  // past %.10g: printed rounded, as always
  st.preemptions = 2;
  st.prefix_cache_queries = 5000;
  st.prefix_cache_hits = 1200;
  st.finished_stop = 7;
  st.finished_length = 18446744073709551615ull;
  st.finished_abort = 0;
  st.rank_restarts = 2;
  st.rank_last_recovery_seconds = 0.031;
  e.requests_rejected = 4;
  engine::Histogram ttft({2.5, 0.001, 0.5});  // the engine sorts the bounds
  for (double v : {0.0005, 0.3, 0.3, 100.0}) ttft.observe(v);
  e.ttft = ttft.snapshot();
  e.inter_token = {{1e-05, 0.25, 100}, {0, 0, 2, 2}, 0.123456789012, 2};
  e.e2e = engine::Histogram({60.0}).snapshot();
  engine::Histogram len({1, 2, 5});
  for (double v : {1, 4, 9}) len.observe(v);
  e.queue_time = e.prefill_time = e.decode_time = engine::Histogram({0.5}).snapshot();
  e.prompt_length = e.generation_length = len.snapshot();
  m.engine = e;
  // Made by the formatting code this replaced (engine Histogram::render and the service's).
  const char* expected = R"(
# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes 987654321
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 123456789
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1764000000
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 17
# HELP process_max_fds Maximum number of open file descriptors.
# TYPE process_max_fds gauge
process_max_fds 1024
# HELP sandwich:model_ready 1 once the model is loaded
# TYPE sandwich:model_ready gauge
sandwich:model_ready{model_name="llama"} 1
# HELP sandwich:num_requests_running Requests in the running batch
# TYPE sandwich:num_requests_running gauge
sandwich:num_requests_running{model_name="llama"} 5
# HELP sandwich:num_requests_waiting Requests waiting to be scheduled
# TYPE sandwich:num_requests_waiting gauge
sandwich:num_requests_waiting{model_name="llama"} 3
# HELP sandwich:kv_cache_usage_perc Fraction of KV-cache blocks in use
# TYPE sandwich:kv_cache_usage_perc gauge
sandwich:kv_cache_usage_perc{model_name="llama"} 0.3333333333
# HELP sandwich:kv_cache_blocks_used KV-cache blocks in use
# TYPE sandwich:kv_cache_blocks_used gauge
sandwich:kv_cache_blocks_used{model_name="llama"} 1000
# HELP sandwich:kv_cache_blocks_total KV-cache blocks
# TYPE sandwich:kv_cache_blocks_total gauge
sandwich:kv_cache_blocks_total{model_name="llama"} 3000
# HELP sandwich:request_success_total Finished requests by finish reason
# TYPE sandwich:request_success_total counter
sandwich:request_success_total{model_name="llama",finished_reason="stop"} 7
sandwich:request_success_total{model_name="llama",finished_reason="length"} 18446744073709551615
sandwich:request_success_total{model_name="llama",finished_reason="abort"} 0
# HELP sandwich:prompt_tokens_total Prompt tokens processed (recomputation included)
# TYPE sandwich:prompt_tokens_total counter
sandwich:prompt_tokens_total{model_name="llama"} 98765
# HELP sandwich:generation_tokens_total Tokens generated
# TYPE sandwich:generation_tokens_total counter
sandwich:generation_tokens_total{model_name="llama"} 1.23456789e+10
# HELP sandwich:prefix_cache_queries_total Tokens of admitted sequences looked up in the prefix cache
# TYPE sandwich:prefix_cache_queries_total counter
sandwich:prefix_cache_queries_total{model_name="llama"} 5000
# HELP sandwich:prefix_cache_hits_total Tokens found in the prefix cache
# TYPE sandwich:prefix_cache_hits_total counter
sandwich:prefix_cache_hits_total{model_name="llama"} 1200
# HELP sandwich:num_preemptions_total Sequences preempted for lack of KV blocks
# TYPE sandwich:num_preemptions_total counter
sandwich:num_preemptions_total{model_name="llama"} 2
# HELP sandwich:prefill_steps_total Prefill steps run
# TYPE sandwich:prefill_steps_total counter
sandwich:prefill_steps_total{model_name="llama"} 12
# HELP sandwich:decode_steps_total Decode steps run
# TYPE sandwich:decode_steps_total counter
sandwich:decode_steps_total{model_name="llama"} 3456789012
# HELP sandwich:prefill_step_seconds_total Time in prefill steps
# TYPE sandwich:prefill_step_seconds_total counter
sandwich:prefill_step_seconds_total{model_name="llama"} 1.25
# HELP sandwich:decode_step_seconds_total Time in decode steps
# TYPE sandwich:decode_step_seconds_total counter
sandwich:decode_step_seconds_total{model_name="llama"} 1234.56789
# HELP sandwich:grammar_seconds_total Time structured output's grammars took (token masks and checks)
# TYPE sandwich:grammar_seconds_total counter
sandwich:grammar_seconds_total{model_name="llama"} 0
# HELP sandwich:grammar_tokens_total Tokens chosen under a grammar
# TYPE sandwich:grammar_tokens_total counter
sandwich:grammar_tokens_total{model_name="llama"} 0
# HELP sandwich:rank_restarts_total Rank groups re-formed after a rank process died, failed or hung
# TYPE sandwich:rank_restarts_total counter
sandwich:rank_restarts_total{model_name="llama"} 2
# HELP sandwich:rank_last_recovery_seconds Time from a rank failure's detection to serving again, last re-formation
# TYPE sandwich:rank_last_recovery_seconds gauge
sandwich:rank_last_recovery_seconds{model_name="llama"} 0.031
# HELP sandwich:requests_rejected_total Requests refused because the queue was full
# TYPE sandwich:requests_rejected_total counter
sandwich:requests_rejected_total{model_name="llama"} 4
# HELP sandwich:time_to_first_token_seconds Time to first token
# TYPE sandwich:time_to_first_token_seconds histogram
sandwich:time_to_first_token_seconds_bucket{model_name="llama",le="0.001"} 1
sandwich:time_to_first_token_seconds_bucket{model_name="llama",le="0.5"} 3
sandwich:time_to_first_token_seconds_bucket{model_name="llama",le="2.5"} 3
sandwich:time_to_first_token_seconds_bucket{model_name="llama",le="+Inf"} 4
sandwich:time_to_first_token_seconds_sum{model_name="llama"} 100.6005
sandwich:time_to_first_token_seconds_count{model_name="llama"} 4
# HELP sandwich:inter_token_latency_seconds Time between output tokens
# TYPE sandwich:inter_token_latency_seconds histogram
sandwich:inter_token_latency_seconds_bucket{model_name="llama",le="1e-05"} 0
sandwich:inter_token_latency_seconds_bucket{model_name="llama",le="0.25"} 0
sandwich:inter_token_latency_seconds_bucket{model_name="llama",le="100"} 2
sandwich:inter_token_latency_seconds_bucket{model_name="llama",le="+Inf"} 2
sandwich:inter_token_latency_seconds_sum{model_name="llama"} 0.123456789
sandwich:inter_token_latency_seconds_count{model_name="llama"} 2
# HELP sandwich:e2e_request_latency_seconds End-to-end request latency
# TYPE sandwich:e2e_request_latency_seconds histogram
sandwich:e2e_request_latency_seconds_bucket{model_name="llama",le="60"} 0
sandwich:e2e_request_latency_seconds_bucket{model_name="llama",le="+Inf"} 0
sandwich:e2e_request_latency_seconds_sum{model_name="llama"} 0
sandwich:e2e_request_latency_seconds_count{model_name="llama"} 0
# HELP sandwich:request_queue_time_seconds Time a request waited before it was first scheduled
# TYPE sandwich:request_queue_time_seconds histogram
sandwich:request_queue_time_seconds_bucket{model_name="llama",le="0.5"} 0
sandwich:request_queue_time_seconds_bucket{model_name="llama",le="+Inf"} 0
sandwich:request_queue_time_seconds_sum{model_name="llama"} 0
sandwich:request_queue_time_seconds_count{model_name="llama"} 0
# HELP sandwich:request_prefill_time_seconds Time from a request's first scheduling to its first token
# TYPE sandwich:request_prefill_time_seconds histogram
sandwich:request_prefill_time_seconds_bucket{model_name="llama",le="0.5"} 0
sandwich:request_prefill_time_seconds_bucket{model_name="llama",le="+Inf"} 0
sandwich:request_prefill_time_seconds_sum{model_name="llama"} 0
sandwich:request_prefill_time_seconds_count{model_name="llama"} 0
# HELP sandwich:request_decode_time_seconds Time from a request's first token to its end
# TYPE sandwich:request_decode_time_seconds histogram
sandwich:request_decode_time_seconds_bucket{model_name="llama",le="0.5"} 0
sandwich:request_decode_time_seconds_bucket{model_name="llama",le="+Inf"} 0
sandwich:request_decode_time_seconds_sum{model_name="llama"} 0
sandwich:request_decode_time_seconds_count{model_name="llama"} 0
# HELP sandwich:request_prompt_tokens Prompt length of finished requests, in tokens
# TYPE sandwich:request_prompt_tokens histogram
sandwich:request_prompt_tokens_bucket{model_name="llama",le="1"} 1
sandwich:request_prompt_tokens_bucket{model_name="llama",le="2"} 1
sandwich:request_prompt_tokens_bucket{model_name="llama",le="5"} 2
sandwich:request_prompt_tokens_bucket{model_name="llama",le="+Inf"} 3
sandwich:request_prompt_tokens_sum{model_name="llama"} 14
sandwich:request_prompt_tokens_count{model_name="llama"} 3
# HELP sandwich:request_generation_tokens Output length of finished requests, in tokens
# TYPE sandwich:request_generation_tokens histogram
sandwich:request_generation_tokens_bucket{model_name="llama",le="1"} 1
sandwich:request_generation_tokens_bucket{model_name="llama",le="2"} 1
sandwich:request_generation_tokens_bucket{model_name="llama",le="5"} 2
sandwich:request_generation_tokens_bucket{model_name="llama",le="+Inf"} 3
sandwich:request_generation_tokens_sum{model_name="llama"} 14
sandwich:request_generation_tokens_count{model_name="llama"} 3
)";
  EXPECT_EQ(metrics_text(m), std::string(expected + 1));
  EXPECT_NO_THROW(parse_prometheus(metrics_text(m)));
}

TEST(Prometheus, FamiliesOfEachType) {
  PrometheusText p;
  p.gauge("g", "A gauge", 0.5);
  p.counter("c", "A counter", 3);
  p.labelled_counter("l", "By colour", "colour", {{"red", 1}, {"blue", 0}});
  p.histogram("h", "A histogram", {{0.1}, {1, 2}, 2.5, 2});
  EXPECT_EQ(p.text(),
            "# HELP g A gauge\n# TYPE g gauge\ng 0.5\n"
            "# HELP c A counter\n# TYPE c counter\nc 3\n"
            "# HELP l By colour\n# TYPE l counter\nl{colour=\"red\"} 1\nl{colour=\"blue\"} 0\n"
            "# HELP h A histogram\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\n"
            "h_bucket{le=\"+Inf\"} 2\nh_sum 2.5\nh_count 2\n");
}

TEST(Prometheus, LabelValuesAreEscaped) {
  MetricsSnapshot m;
  m.model_name = "a\\b\"c\nd";
  const std::string text = metrics_text(m);
  EXPECT_NE(text.find(R"(sandwich:model_ready{model_name="a\\b\"c\nd"} 0)"), std::string::npos)
      << text;
  const PromPage page = parse_prometheus(text);
  EXPECT_EQ(page.family("sandwich:model_ready").samples.at(0).label("model_name"), m.model_name);
}

// The parser is strict: each rule it checks fails a page that breaks it.
TEST(PrometheusParser, RefusesPagesThatBreakTheRules) {
  const std::string meta = "# HELP h H\n# TYPE h histogram\n";
  const std::string good = meta +
                           "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"
                           "# HELP c_total C\n# TYPE c_total counter\nc_total{a=\"x\"} 1\n";
  EXPECT_NO_THROW(parse_prometheus(good));
  const std::pair<const char*, std::string> bad[] = {
      {"no TYPE", "# HELP g G\ng 1\n"},
      {"no HELP", "# TYPE g gauge\ng 1\n"},
      {"TYPE after samples", "# HELP g G\ng 1\n# TYPE g gauge\n"},
      {"two TYPEs", "# HELP g G\n# TYPE g gauge\n# TYPE g gauge\ng 1\n"},
      {"bad name", "# HELP g G\n# TYPE g gauge\n1g 1\n"},
      {"bad label name", "# HELP g G\n# TYPE g gauge\ng{a-b=\"x\"} 1\n"},
      {"bad escape", "# HELP g G\n# TYPE g gauge\ng{a=\"\\x\"} 1\n"},
      {"unquoted value", "# HELP g G\n# TYPE g gauge\ng{a=x} 1\n"},
      {"bad number", "# HELP g G\n# TYPE g gauge\ng one\n"},
      {"duplicate series", "# HELP g G\n# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"1\"} 2\n"},
      {"counter not *_total", "# HELP c C\n# TYPE c counter\nc 1\n"},
      {"families interleaved",
       "# HELP a A\n# TYPE a gauge\n# HELP b B\n# TYPE b gauge\na 1\nb 1\na{x=\"1\"} 1\n"},
      {"no +Inf", meta + "h_bucket{le=\"1\"} 1\nh_sum 3\nh_count 2\n"},
      {"+Inf not _count",
       meta + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 3\n"},
      {"decreasing buckets",
       meta + "h_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"},
      {"le not ascending", meta + "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
                                  "h_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"},
      {"no _sum", meta + "h_bucket{le=\"+Inf\"} 2\nh_count 2\n"},
      {"no final newline", "# HELP g G\n# TYPE g gauge\ng 1"},
  };
  for (const auto& [why, page] : bad)
    EXPECT_THROW(parse_prometheus(page), std::runtime_error) << why << ":\n" << page;
}

// A running sandwichd's /metrics after a few requests: valid, labelled with the served model,
// with the process_* metrics and every histogram filled.
TEST(Prometheus, RunningServerPageFollowsTheExpositionRules) {
  SANDWICH_REQUIRE_DATA();
  test::Daemon d(test::stories_daemon_args());
  ASSERT_NE(d.port(), 0);
  test::Client c(d.port());
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(c.post("/v1/completions", {{"model", "stories"},
                                         {"prompt", "Once upon a time"},
                                         {"max_tokens", 8},
                                         {"temperature", 0},
                                         {"ignore_eos", true}})
                  .status,
              200);
  const auto r = c.get("/metrics");
  ASSERT_EQ(r.status, 200);
  const PromPage page = parse_prometheus(r.body);
  for (const auto& [name, f] : page.families)
    for (const auto& s : f.samples) {
      if (name.rfind("sandwich:", 0) == 0)
        EXPECT_EQ(s.label("model_name"), "stories") << s.name;
      else
        EXPECT_EQ(name.rfind("process_", 0), 0u) << name;
    }
  EXPECT_GT(page.value("process_resident_memory_bytes"), 1e6);
  EXPECT_GE(page.value("process_virtual_memory_bytes"),
            page.value("process_resident_memory_bytes"));
  EXPECT_GT(page.value("process_cpu_seconds_total"), 0);
  EXPECT_GE(page.value("process_open_fds"), 3);
  EXPECT_GE(page.value("process_max_fds"), page.value("process_open_fds"));
  const double started = page.value("process_start_time_seconds");
  EXPECT_LE(started, static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GT(started, static_cast<double>(std::time(nullptr)) - 600);
  for (const char* h :
       {"sandwich:time_to_first_token_seconds", "sandwich:e2e_request_latency_seconds",
        "sandwich:request_queue_time_seconds", "sandwich:request_prefill_time_seconds",
        "sandwich:request_decode_time_seconds", "sandwich:request_prompt_tokens",
        "sandwich:request_generation_tokens"}) {
    EXPECT_EQ(page.family(h).type, "histogram") << h;
    EXPECT_EQ(page.value(std::string(h) + "_count"), 3) << h;
  }
  EXPECT_EQ(page.value("sandwich:request_generation_tokens_sum"), 24);
  EXPECT_EQ(page.value("sandwich:inter_token_latency_seconds_count"), 21);
  // The buckets reach the request timeout.
  double top = 0;
  for (const auto& s : page.family("sandwich:e2e_request_latency_seconds").samples)
    if (s.name.ends_with("_bucket") && s.label("le") != "+Inf")
      top = std::max(top, std::stod(s.label("le")));
  EXPECT_GT(top, 600);
}

TEST(Prometheus, PreprocessingWorkers) {
  MetricsSnapshot m;
  m.model_name = "m";
  m.preprocess = MetricsSnapshot::Preprocess{4, 2, 7};
  const PromPage page = parse_prometheus(metrics_text(m));
  EXPECT_EQ(page.value("sandwich:preprocess_threads"), 4);
  EXPECT_EQ(page.value("sandwich:preprocess_requests_running"), 2);
  EXPECT_EQ(page.value("sandwich:preprocess_requests_waiting"), 7);
  EXPECT_EQ(page.family("sandwich:preprocess_requests_waiting").type, "gauge");
}

}  // namespace
}  // namespace sandwich::server
