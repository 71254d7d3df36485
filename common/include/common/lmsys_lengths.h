#pragma once
// A model of LMSYS-Chat-1M's request lengths (there is no trace of them here): for the serving
// benchmark's and the tuner's "lmsys" workload.
#include <cstdint>
#include <vector>

#include "common/length_trace.h"

namespace sandwich {

// LMSYS-Chat-1M's published per-turn averages (Zheng et al., 2023, Table 1).
inline constexpr double kLmsysMeanPrompt = 69.5;
inline constexpr double kLmsysMeanResponse = 214.5;

// n pairs with lengths drawn from geometric distributions on {1, 2, ...} with the published
// means (the maximum-entropy choice when only the mean is known), redrawn while input + output
// exceeds max_len. Deterministic for a seed. max_len must be at least 2.
std::vector<LengthPair> lmsys_lengths(int n, uint64_t seed, int max_len);

}  // namespace sandwich
