#pragma once
// The bodies behind attention(), which picks one per call (attention.h): the scalar reference is
// attention_ref itself.
#include <cstdint>

#include "kernels/attention.h"

namespace sandwich::kernels {

// head_dim even and at most 1024; kv.dtype F32 or BF16.
void attention_avx512(const PagedKV& kv, const int32_t* block_table, int32_t kv_head,
                      const float* q, int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos,
                      float scale, float* out, int64_t ldo, const AttentionParams& params);

}  // namespace sandwich::kernels
