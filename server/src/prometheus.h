#pragma once
// The /metrics page in Prometheus text exposition format (version 0.0.4): the server's and the
// engine's numbers, formatted here and nowhere else.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/metrics.h"
#include "engine/runtime/scheduler.h"
#include "process_metrics.h"
#include "server/http_server.h"

namespace sandwich::server {

// A label value escaped as the exposition format asks (\\, \", \n).
std::string escape_label_value(const std::string& v);

// Metric families, each with its # HELP and # TYPE lines.
class PrometheusText {
 public:
  // Labels every sample written from now on carries first (e.g. model_name).
  void set_const_labels(std::vector<std::pair<std::string, std::string>> labels);
  void gauge(const std::string& name, const std::string& help, double v);
  void counter(const std::string& name, const std::string& help, double v);
  // A counter with one sample per value of `label`.
  void labelled_counter(const std::string& name, const std::string& help, const std::string& label,
                        const std::vector<std::pair<std::string, uint64_t>>& samples);
  void histogram(const std::string& name, const std::string& help,
                 const engine::Histogram::Snapshot& h);
  const std::string& text() const { return s_; }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  // "{a=\"x\",b=\"y\"}" of the const labels and `more`; empty when there are none.
  std::string labels(const std::vector<std::pair<std::string, std::string>>& more = {}) const;
  std::string s_;
  std::vector<std::pair<std::string, std::string>> const_labels_;
};

// What /metrics reports, read at one time.
struct MetricsSnapshot {
  std::string model_name;  // the model_name label of every sandwich:* series
  bool model_ready = false;
  std::optional<ProcessStats> process;
  struct Engine {
    engine::SchedulerStats stats;
    uint64_t requests_rejected = 0;  // refused because the queue was full
    engine::Histogram::Snapshot ttft, inter_token, e2e;
    engine::Histogram::Snapshot queue_time, prefill_time, decode_time, prompt_length,
        generation_length;
  };
  std::optional<Engine> engine;  // once a scheduler is attached
  std::optional<HttpServerStats> http;
  // The preprocessing workers (bodies, chat templates, tokenizers).
  struct Preprocess {
    int threads = 0, running = 0;
    size_t waiting = 0;
  };
  std::optional<Preprocess> preprocess;
};

std::string metrics_text(const MetricsSnapshot& m);

}  // namespace sandwich::server
