#pragma once
// Request traces for the latency simulator: (input, output) token lengths sampled from the
// ShareGPT length trace (common/length_trace.h).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/length_trace.h"

namespace sandwich::tuner {

struct RequestTrace {
  std::vector<LengthPair> requests;
  std::string source;  // for messages: "64 requests sampled from sharegpt_lengths.csv (seed 0)"
  double mean_input() const;
  double mean_output() const;
  // Mean context a decode step attends over, weighted by output length: a request of input i
  // and output o decodes o steps at contexts i .. i+o-1.
  double mean_decode_context() const;
};

// n requests drawn uniformly with a fixed seed, clipped to the model's context (input at least
// 1 token, input + output at most max_seq_len).
RequestTrace sample_trace(const std::vector<LengthPair>& table, int n, uint64_t seed,
                          int32_t max_seq_len, const std::string& table_name);

}  // namespace sandwich::tuner
