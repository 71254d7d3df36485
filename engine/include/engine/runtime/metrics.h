#pragma once
// Histograms the scheduler keeps (latencies); the server reads their snapshots for /metrics.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sandwich::engine {

// A cumulative histogram with fixed upper bounds, as Prometheus defines it.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Latency buckets in seconds, 1 ms .. 7680 s: past the longest --request-timeout a dashboard
// will meet (vLLM's TTFT buckets up to 60 s, then doubling).
std::vector<double> latency_buckets();
// Inter-token latency buckets in seconds, 1 ms .. 60 s.
std::vector<double> inter_token_buckets();
// Token-count buckets 1, 2, 5, 10, 20, 50, ... up to the first one reaching max (as vLLM's
// build_1_2_5_buckets for prompt and generation lengths).
std::vector<double> length_buckets(int64_t max);

}  // namespace sandwich::engine
