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

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void PrometheusText::set_const_labels(std::vector<std::pair<std::string, std::string>> labels) {
  const_labels_ = std::move(labels);
}

std::string PrometheusText::labels(
    const std::vector<std::pair<std::string, std::string>>& more) const {
  std::string out;
  for (const auto* set : {&const_labels_, &more})
    for (const auto& [k, v] : *set)
      out += (out.empty() ? "{" : ",") + k + "=\"" + escape_label_value(v) + "\"";
  return out.empty() ? out : out + "}";
}

void PrometheusText::header(const std::string& name, const std::string& help, const char* type) {
  s_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::gauge(const std::string& name, const std::string& help, double v) {
  header(name, help, "gauge");
  s_ += name + labels() + " " + format("%.10g", v) + "\n";
}

void PrometheusText::counter(const std::string& name, const std::string& help, double v) {
  header(name, help, "counter");
  s_ += name + labels() + " " + format("%.10g", v) + "\n";
}

void PrometheusText::labelled_counter(
    const std::string& name, const std::string& help, const std::string& label,
    const std::vector<std::pair<std::string, uint64_t>>& samples) {
  header(name, help, "counter");
  for (auto& [value, n] : samples)
    s_ += name + labels({{label, value}}) + " " + std::to_string(n) + "\n";
}

void PrometheusText::histogram(const std::string& name, const std::string& help,
                               const engine::Histogram::Snapshot& h) {
  header(name, help, "histogram");
  for (size_t i = 0; i < h.bounds.size() && i < h.cumulative.size(); ++i)
    s_ += name + "_bucket" + labels({{"le", format("%g", h.bounds[i])}}) + " " +
          std::to_string(h.cumulative[i]) + "\n";
  s_ += name + "_bucket" + labels({{"le", "+Inf"}}) + " " +
        std::to_string(h.cumulative.empty() ? h.count : h.cumulative.back()) + "\n";
  s_ += name + "_sum" + labels() + " " + format("%.9g", h.sum) + "\n";
  s_ += name + "_count" + labels() + " " + std::to_string(h.count) + "\n";
}

std::string metrics_text(const MetricsSnapshot& m) {
  PrometheusText p;
  if (m.process) {
    // As prometheus_client names them, without the model label.
    const ProcessStats& ps = *m.process;
    p.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
            ps.virtual_memory_bytes);
    p.gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
            ps.resident_memory_bytes);
    p.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
            ps.start_time_seconds);
    p.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
              ps.cpu_seconds);
    p.gauge("process_open_fds", "Number of open file descriptors.", ps.open_fds);
    p.gauge("process_max_fds", "Maximum number of open file descriptors.", ps.max_fds);
  }
  p.set_const_labels({{"model_name", m.model_name}});
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
  if (m.preprocess) {
    p.gauge("sandwich:preprocess_threads",
            "Workers that parse request bodies, render chat templates and tokenize",
            m.preprocess->threads);
    p.gauge("sandwich:preprocess_requests_running", "Requests being preprocessed",
            m.preprocess->running);
    p.gauge("sandwich:preprocess_requests_waiting", "Requests waiting for a preprocessing worker",
            static_cast<double>(m.preprocess->waiting));
  }
  if (!m.engine) return p.text();
  const engine::SchedulerStats& st = m.engine->stats;
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
  p.counter("sandwich:grammar_seconds_total",
            "Time structured output's grammars took (token masks and checks)", st.grammar_seconds);
  p.counter("sandwich:grammar_tokens_total", "Tokens chosen under a grammar",
            static_cast<double>(st.grammar_tokens));
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
  p.histogram("sandwich:request_queue_time_seconds",
              "Time a request waited before it was first scheduled", m.engine->queue_time);
  p.histogram("sandwich:request_prefill_time_seconds",
              "Time from a request's first scheduling to its first token", m.engine->prefill_time);
  p.histogram("sandwich:request_decode_time_seconds",
              "Time from a request's first token to its end", m.engine->decode_time);
  p.histogram("sandwich:request_prompt_tokens", "Prompt length of finished requests, in tokens",
              m.engine->prompt_length);
  p.histogram("sandwich:request_generation_tokens", "Output length of finished requests, in tokens",
              m.engine->generation_length);
  return p.text();
}

}  // namespace sandwich::server
