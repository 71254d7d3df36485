#include "tuner/trace_sampler.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace sandwich::tuner {

double RequestTrace::mean_input() const {
  double s = 0;
  for (const auto& r : requests) s += r.input;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double RequestTrace::mean_output() const {
  double s = 0;
  for (const auto& r : requests) s += r.output;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double RequestTrace::mean_decode_context() const {
  double weighted = 0, steps = 0;
  for (const auto& r : requests) {
    weighted += static_cast<double>(r.output) * (r.input + (r.output - 1) / 2.0);
    steps += r.output;
  }
  return steps > 0 ? weighted / steps : 0;
}

RequestTrace sample_trace(const std::vector<LengthPair>& table, int n, uint64_t seed,
                          int32_t max_seq_len, const std::string& table_name) {
  if (table.empty()) throw std::invalid_argument("cannot sample a trace from an empty table");
  if (n < 1) throw std::invalid_argument("a trace needs at least one request");
  if (max_seq_len < 2)
    throw std::invalid_argument("the model's context must hold at least 2 tokens");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, table.size() - 1);
  RequestTrace t;
  for (int i = 0; i < n; ++i) {
    LengthPair r = table[pick(rng)];
    r.input = std::clamp(r.input, 1, max_seq_len - 1);
    r.output = std::clamp(r.output, 1, max_seq_len - r.input);
    t.requests.push_back(r);
  }
  t.source = std::to_string(n) + " requests sampled from " + table_name + " (seed " +
             std::to_string(seed) + ")";
  return t;
}

}  // namespace sandwich::tuner
