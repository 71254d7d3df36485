#include "prometheus.h"

#include <cstdio>

namespace sandwich::server {
namespace {

std::string format(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void PrometheusText::header(const std::string& name, const std::string& help, const char* type) {
  s_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::gauge(const std::string& name, const std::string& help, double v) {
  header(name, help, "gauge");
  s_ += name + " " + format("%.10g", v) + "\n";
}

void PrometheusText::counter(const std::string& name, const std::string& help, double v) {
  header(name, help, "counter");
  s_ += name + " " + format("%.10g", v) + "\n";
}

void PrometheusText::labelled_counter(
    const std::string& name, const std::string& help, const std::string& label,
    const std::vector<std::pair<std::string, uint64_t>>& samples) {
  header(name, help, "counter");
  for (auto& [value, n] : samples)
    s_ += name + "{" + label + "=\"" + value + "\"} " + std::to_string(n) + "\n";
}

void PrometheusText::histogram(const std::string& name, const std::string& help,
                               const Histogram::Snapshot& h) {
  header(name, help, "histogram");
  for (size_t i = 0; i < h.bounds.size(); ++i)
    s_ += name + "_bucket{le=\"" + format("%g", h.bounds[i]) + "\"} " +
          std::to_string(h.cumulative[i]) + "\n";
  s_ += name + "_bucket{le=\"+Inf\"} " + std::to_string(h.cumulative.back()) + "\n";
  s_ += name + "_sum " + format("%.9g", h.sum) + "\n";
  s_ += name + "_count " + std::to_string(h.count) + "\n";
}

std::string metrics_text(const MetricsSnapshot& m) {
  PrometheusText p;
  p.gauge("sandwich:model_ready", "1 once the model is loaded", m.model_ready ? 1 : 0);
  if (m.http) {
    const HttpServerStats& h = *m.http;
    p.gauge("sandwich:http_open_connections", "Open HTTP connections", h.open_connections);
    p.labelled_counter(
        "sandwich:http_connections_refused_total",
        "Connections refused with 503 by the connection limits", "reason",
        {{"max_connections", h.refused_max_connections}, {"per_client", h.refused_per_client}});
    p.labelled_counter("sandwich:http_read_timeouts_total",
                       "Connections closed because a request's head or body came too slowly",
                       "phase", {{"header", h.header_timeouts}, {"body", h.body_timeouts}});
    p.labelled_counter("sandwich:requests_aborted_total",
                       "Requests aborted because the client did not read its answer", "reason",
                       {{"send_buffer_full", h.aborted_send_buffer_full},
                        {"write_timeout", h.aborted_write_timeout}});
  }
  if (!m.engine) return p.text();
  const SchedulerStats& st = m.engine->stats;
  p.gauge("sandwich:num_requests_running", "Requests in the running batch", st.running);
  p.gauge("sandwich:num_requests_waiting", "Requests waiting to be scheduled", st.waiting);
  p.gauge("sandwich:kv_cache_usage_perc", "Fraction of KV-cache blocks in use",
          st.kv_blocks_total ? static_cast<double>(st.kv_blocks_used) / st.kv_blocks_total : 0.0);
  p.gauge("sandwich:kv_cache_blocks_used", "KV-cache blocks in use", st.kv_blocks_used);
  p.gauge("sandwich:kv_cache_blocks_total", "KV-cache blocks", st.kv_blocks_total);
  p.labelled_counter(
      "sandwich:request_success_total", "Finished requests by finish reason", "finished_reason",
      {{"stop", st.finished_stop}, {"length", st.finished_length}, {"abort", st.finished_abort}});
  p.counter("sandwich:prompt_tokens_total", "Prompt tokens processed (recomputation included)",
            static_cast<double>(st.prompt_tokens));
  p.counter("sandwich:generation_tokens_total", "Tokens generated",
            static_cast<double>(st.generation_tokens));
  p.counter("sandwich:prefix_cache_queries_total",
            "Tokens of admitted sequences looked up in the prefix cache",
            static_cast<double>(st.prefix_cache_queries));
  p.counter("sandwich:prefix_cache_hits_total", "Tokens found in the prefix cache",
            static_cast<double>(st.prefix_cache_hits));
  p.counter("sandwich:num_preemptions_total", "Sequences preempted for lack of KV blocks",
            static_cast<double>(st.preemptions));
  p.counter("sandwich:prefill_steps_total", "Prefill steps run",
            static_cast<double>(st.prefill_steps));
  p.counter("sandwich:decode_steps_total", "Decode steps run",
            static_cast<double>(st.decode_steps));
  p.counter("sandwich:prefill_step_seconds_total", "Time in prefill steps", st.prefill_seconds);
  p.counter("sandwich:decode_step_seconds_total", "Time in decode steps", st.decode_seconds);
  p.counter("sandwich:rank_restarts_total",
            "Rank groups re-formed after a rank process died, failed or hung",
            static_cast<double>(st.rank_restarts));
  p.gauge("sandwich:rank_last_recovery_seconds",
          "Time from a rank failure's detection to serving again, last re-formation",
          st.rank_last_recovery_seconds);
  p.counter("sandwich:requests_rejected_total", "Requests refused because the queue was full",
            static_cast<double>(m.engine->requests_rejected));
  p.histogram("sandwich:time_to_first_token_seconds", "Time to first token", m.engine->ttft);
  p.histogram("sandwich:inter_token_latency_seconds", "Time between output tokens",
              m.engine->inter_token);
  p.histogram("sandwich:e2e_request_latency_seconds", "End-to-end request latency", m.engine->e2e);
  return p.text();
}

}  // namespace sandwich::server
