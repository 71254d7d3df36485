#include "engine/runtime/metrics.h"

#include <algorithm>

namespace sandwich::engine {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  sum_ += v;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot s;
  s.bounds = bounds_;
  uint64_t c = 0;
  for (uint64_t n : counts_) s.cumulative.push_back(c += n);
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> latency_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08,  0.1,   0.25,  0.5,   0.75,   1.0,   2.5,
          5.0,   7.5,   10.0, 20.0, 40.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> inter_token_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1,  0.15, 0.2,
          0.3,   0.4,   0.5,  0.75, 1.0,  2.5,  5.0,  10.0,  20.0, 40.0, 60.0};
}

std::vector<double> length_buckets(int64_t max) {
  std::vector<double> out;
  for (int64_t decade = 1;; decade *= 10)
    for (int64_t m : {1, 2, 5}) {
      out.push_back(static_cast<double>(m * decade));
      if (m * decade >= max) return out;
    }
}

}  // namespace sandwich::engine
