#pragma once
// Request lengths for the serving benchmark: (prompt tokens, output tokens) pairs from a trace
// or a model of one. Every server under comparison gets the same pairs.
#include <cstdint>
#include <string>
#include <vector>

#include "common/length_trace.h"
#include "common/lmsys_lengths.h"

namespace sandwich::bench {

struct DatasetSpec {
  enum class Kind { ShareGpt, Lmsys, Fixed, Csv };
  Kind kind = Kind::ShareGpt;
  int fixed_input = 0, fixed_output = 0;  // Fixed
  std::string path;                       // Csv
  std::string describe() const;
};

// "sharegpt", "lmsys", "fixed:IN,OUT" or "csv:PATH"; throws std::invalid_argument.
DatasetSpec parse_dataset_spec(const std::string& text);

// n pairs with input + output <= max_model_len:
// - ShareGPT: the trace shuffled by the seed, then taken in order, skipping pairs with fewer
//   than 4 input or output tokens or that do not fit the context (vLLM's sampling filter);
// - LMSYS: a model of the data, not the data (common/lmsys_lengths.h);
// - fixed: n copies; CSV: its rows in file order, cycled.
// Throws std::invalid_argument when the request cannot be met.
std::vector<LengthPair> sample_lengths(const DatasetSpec& spec, int n, uint64_t seed,
                                       int max_model_len, const std::string& sharegpt_path = {});

}  // namespace sandwich::bench
