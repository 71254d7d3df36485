#pragma once
// Request traces for the latency simulator: (input, output) token lengths sampled from the
// ShareGPT length table ($SANDWICH_SHARED/data/traces/sharegpt_lengths.csv).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sandwich::tuner {

struct RequestLengths {
  int32_t input = 0, output = 0;
};

struct RequestTrace {
  std::vector<RequestLengths> requests;
  std::string source;  // for messages: "64 requests sampled from sharegpt_lengths.csv (seed 0)"
  double mean_input() const;
  double mean_output() const;
  // Mean context a decode step attends over, weighted by output length: a request of input i
  // and output o decodes o steps at contexts i .. i+o-1.
  double mean_decode_context() const;
};

// Reads an "input_tokens,output_tokens" CSV (header optional). Throws naming the bad line.
std::vector<RequestLengths> read_length_table(const std::filesystem::path& csv);

// n requests drawn uniformly with a fixed seed, clipped to the model's context (input at least
// 1 token, input + output at most max_seq_len).
RequestTrace sample_trace(const std::vector<RequestLengths>& table, int n, uint64_t seed,
                          int32_t max_seq_len, const std::string& table_name);

// $SANDWICH_SHARED (default: the shared folder next to the source
// tree)/data/traces/sharegpt_lengths.csv.
std::filesystem::path default_trace_table();

}  // namespace sandwich::tuner
