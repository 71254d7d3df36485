#pragma once
// Attention as a tunable kernel: the names, shape key and parameters under which a tuner stores
// its block sizes in the kernel_tunables registry, and what a caller runs for a given M.
//   attention_prefill: M = the prompt tokens of a step; q_chunk, pass_rows, kv_blocks.
//   attention_decode:  M = the sequences decoding one token in a step; kv_blocks.
// Key: head_dim, group (query heads per KV head), kv_heads (one rank's), threads (the rank's).
#include <cstdint>
#include <map>
#include <string>

#include "kernels/attention.h"

namespace sandwich::kernels {

inline constexpr const char* kAttentionPrefill = "attention_prefill";
inline constexpr const char* kAttentionDecode = "attention_decode";

// Query tokens per attention work item when nothing is tuned: small enough to balance long
// prefill chunks over the team, large enough that each item amortises its pass over the KV.
constexpr int32_t kDefaultQueryChunk = 32;

struct AttentionPlan {
  AttentionParams kernel;
  int32_t q_chunk = kDefaultQueryChunk;  // query tokens per work item (a caller's split)
  bool operator==(const AttentionPlan&) const = default;
};

std::map<std::string, int64_t> attention_key(int32_t head_dim, int32_t group, int32_t kv_heads,
                                             int threads);
// The installed parameters for this key and M over the defaults (each parameter the table lacks
// or holds out of range keeps its default). One registry lookup: call once per step.
AttentionPlan attention_prefill_plan(const std::map<std::string, int64_t>& key, int64_t m);
AttentionPlan attention_decode_plan(const std::map<std::string, int64_t>& key, int64_t m);
// The registry's form of a plan for `kernel` (the parameters that kernel tunes).
std::map<std::string, int64_t> attention_params_map(const std::string& kernel,
                                                    const AttentionPlan& plan);

}  // namespace sandwich::kernels
