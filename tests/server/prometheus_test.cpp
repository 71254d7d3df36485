// The /metrics page, pinned byte for byte for a made-up snapshot: Prometheus scrapers and
// dashboards read these names and this layout.
#include "prometheus.h"

#include <gtest/gtest.h>

namespace sandwich::server {
namespace {

TEST(Prometheus, BeforeTheModelIsLoadedOnlyReadiness) {
  EXPECT_EQ(metrics_text({}),
            "# HELP sandwich:model_ready 1 once the model is loaded\n"
            "# TYPE sandwich:model_ready gauge\n"
            "sandwich:model_ready 0\n");
}

TEST(Prometheus, FullPage) {
  MetricsSnapshot m;
  m.model_ready = true;
  MetricsSnapshot::Engine e;
  SchedulerStats& st = e.stats;
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
  Histogram ttft({2.5, 0.001, 0.5});  // the engine sorts the bounds
  for (double v : {0.0005, 0.3, 0.3, 100.0}) ttft.observe(v);
  e.ttft = ttft.snapshot();
  e.inter_token = {{1e-05, 0.25, 100}, {0, 0, 2, 2}, 0.123456789012, 2};
  e.e2e = Histogram({60.0}).snapshot();
  m.engine = e;
  // Made by the formatting code this replaced (engine Histogram::render and the service's).
  const char* expected = R"(
# HELP sandwich:model_ready 1 once the model is loaded
# TYPE sandwich:model_ready gauge
sandwich:model_ready 1
# HELP sandwich:num_requests_running Requests in the running batch
# TYPE sandwich:num_requests_running gauge
sandwich:num_requests_running 5
# HELP sandwich:num_requests_waiting Requests waiting to be scheduled
# TYPE sandwich:num_requests_waiting gauge
sandwich:num_requests_waiting 3
# HELP sandwich:kv_cache_usage_perc Fraction of KV-cache blocks in use
# TYPE sandwich:kv_cache_usage_perc gauge
sandwich:kv_cache_usage_perc 0.3333333333
# HELP sandwich:kv_cache_blocks_used KV-cache blocks in use
# TYPE sandwich:kv_cache_blocks_used gauge
sandwich:kv_cache_blocks_used 1000
# HELP sandwich:kv_cache_blocks_total KV-cache blocks
# TYPE sandwich:kv_cache_blocks_total gauge
sandwich:kv_cache_blocks_total 3000
# HELP sandwich:request_success_total Finished requests by finish reason
# TYPE sandwich:request_success_total counter
sandwich:request_success_total{finished_reason="stop"} 7
sandwich:request_success_total{finished_reason="length"} 18446744073709551615
sandwich:request_success_total{finished_reason="abort"} 0
# HELP sandwich:prompt_tokens_total Prompt tokens processed (recomputation included)
# TYPE sandwich:prompt_tokens_total counter
sandwich:prompt_tokens_total 98765
# HELP sandwich:generation_tokens_total Tokens generated
# TYPE sandwich:generation_tokens_total counter
sandwich:generation_tokens_total 1.23456789e+10
# HELP sandwich:prefix_cache_queries_total Tokens of admitted sequences looked up in the prefix cache
# TYPE sandwich:prefix_cache_queries_total counter
sandwich:prefix_cache_queries_total 5000
# HELP sandwich:prefix_cache_hits_total Tokens found in the prefix cache
# TYPE sandwich:prefix_cache_hits_total counter
sandwich:prefix_cache_hits_total 1200
# HELP sandwich:num_preemptions_total Sequences preempted for lack of KV blocks
# TYPE sandwich:num_preemptions_total counter
sandwich:num_preemptions_total 2
# HELP sandwich:prefill_steps_total Prefill steps run
# TYPE sandwich:prefill_steps_total counter
sandwich:prefill_steps_total 12
# HELP sandwich:decode_steps_total Decode steps run
# TYPE sandwich:decode_steps_total counter
sandwich:decode_steps_total 3456789012
# HELP sandwich:prefill_step_seconds_total Time in prefill steps
# TYPE sandwich:prefill_step_seconds_total counter
sandwich:prefill_step_seconds_total 1.25
# HELP sandwich:decode_step_seconds_total Time in decode steps
# TYPE sandwich:decode_step_seconds_total counter
sandwich:decode_step_seconds_total 1234.56789
# HELP sandwich:rank_restarts_total Rank groups re-formed after a rank process died, failed or hung
# TYPE sandwich:rank_restarts_total counter
sandwich:rank_restarts_total 2
# HELP sandwich:rank_last_recovery_seconds Time from a rank failure's detection to serving again, last re-formation
# TYPE sandwich:rank_last_recovery_seconds gauge
sandwich:rank_last_recovery_seconds 0.031
# HELP sandwich:requests_rejected_total Requests refused because the queue was full
# TYPE sandwich:requests_rejected_total counter
sandwich:requests_rejected_total 4
# HELP sandwich:time_to_first_token_seconds Time to first token
# TYPE sandwich:time_to_first_token_seconds histogram
sandwich:time_to_first_token_seconds_bucket{le="0.001"} 1
sandwich:time_to_first_token_seconds_bucket{le="0.5"} 3
sandwich:time_to_first_token_seconds_bucket{le="2.5"} 3
sandwich:time_to_first_token_seconds_bucket{le="+Inf"} 4
sandwich:time_to_first_token_seconds_sum 100.6005
sandwich:time_to_first_token_seconds_count 4
# HELP sandwich:inter_token_latency_seconds Time between output tokens
# TYPE sandwich:inter_token_latency_seconds histogram
sandwich:inter_token_latency_seconds_bucket{le="1e-05"} 0
sandwich:inter_token_latency_seconds_bucket{le="0.25"} 0
sandwich:inter_token_latency_seconds_bucket{le="100"} 2
sandwich:inter_token_latency_seconds_bucket{le="+Inf"} 2
sandwich:inter_token_latency_seconds_sum 0.123456789
sandwich:inter_token_latency_seconds_count 2
# HELP sandwich:e2e_request_latency_seconds End-to-end request latency
# TYPE sandwich:e2e_request_latency_seconds histogram
sandwich:e2e_request_latency_seconds_bucket{le="60"} 0
sandwich:e2e_request_latency_seconds_bucket{le="+Inf"} 0
sandwich:e2e_request_latency_seconds_sum 0
sandwich:e2e_request_latency_seconds_count 0
)";
  EXPECT_EQ(metrics_text(m), std::string(expected + 1));
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

}  // namespace
}  // namespace sandwich::server
