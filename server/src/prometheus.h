#pragma once
// The /metrics page in Prometheus text exposition format (version 0.0.4): the server's and the
// engine's numbers, formatted here and nowhere else.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/metrics.h"
#include "engine/scheduler.h"
#include "server/http_server.h"

namespace sandwich::server {

// Metric families, each with its # HELP and # TYPE lines.
class PrometheusText {
 public:
  void gauge(const std::string& name, const std::string& help, double v);
  void counter(const std::string& name, const std::string& help, double v);
  // A counter with one sample per value of `label`.
  void labelled_counter(const std::string& name, const std::string& help, const std::string& label,
                        const std::vector<std::pair<std::string, uint64_t>>& samples);
  void histogram(const std::string& name, const std::string& help, const Histogram::Snapshot& h);
  const std::string& text() const { return s_; }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  std::string s_;
};

// What /metrics reports, read at one time.
struct MetricsSnapshot {
  bool model_ready = false;
  struct Engine {
    SchedulerStats stats;
    uint64_t requests_rejected = 0;  // refused because the queue was full
    Histogram::Snapshot ttft, inter_token, e2e;
  };
  std::optional<Engine> engine;  // once a scheduler is attached
  std::optional<HttpServerStats> http;
};

std::string metrics_text(const MetricsSnapshot& m);

}  // namespace sandwich::server
