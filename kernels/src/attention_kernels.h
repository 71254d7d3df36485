#pragma once
// One ISA's body of attention(), which picks one set at run time (attention.cpp). Each
// attention_<isa>.cpp defines its set; the scalar one is attention_ref itself.
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"

namespace sandwich::kernels {

struct AttentionKernels {
  Isa isa;
  // Whether the body takes heads of this size (the scalar one takes every size).
  bool (*fits)(int32_t head_dim);
  // kv.dtype is F32 or BF16 (checked by the caller).
  void (*run)(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
              int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale, float* out,
              int64_t ldo, const AttentionParams& params);
};

extern const AttentionKernels kAttentionAvx512;
extern const AttentionKernels kAttentionAvx2;
extern const AttentionKernels kAttentionScalar;

// The vector bodies' head sizes: even (a pair of dims per step or per BF16 load) and at most
// 1024 (their per-row accumulators live on the stack).
constexpr bool vector_attention_fits(int32_t head_dim) {
  return head_dim > 0 && head_dim % 2 == 0 && head_dim <= 1024;
}

}  // namespace sandwich::kernels
