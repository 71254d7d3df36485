// Attention's policy: the paged KV writes, and which body runs a call.
#include "kernels/attention.h"

#include <algorithm>

#include "attention_kernels.h"

namespace sandwich::kernels {

void kv_store(const PagedKV& kv, const int32_t* block_table, int32_t pos, int32_t h0, int32_t h1,
              const float* k, const float* v) {
  const int32_t block = block_table[pos / kKVBlock];
  const int32_t slot = pos % kKVBlock;
  const int32_t hd = kv.head_dim;
  for (int32_t h = h0; h < h1; ++h) {
    const float* kh = k + int64_t{h - h0} * hd;
    const float* vh = v + int64_t{h - h0} * hd;
    float* kd = kv.key(block, h) + slot;
    for (int32_t d = 0; d < hd; ++d) kd[int64_t{d} * kKVBlock] = kh[d];
    std::copy(vh, vh + hd, kv.value(block, h) + int64_t{slot} * hd);
  }
}

Isa attention_isa(int32_t head_dim) {
  if (cpu_has(Isa::Avx512) && head_dim % 2 == 0 && head_dim <= 1024) return Isa::Avx512;
  return Isa::Scalar;
}

void attention(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
               int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
               float* out, int64_t ldo, const AttentionParams& params) {
  if (attention_isa(kv.head_dim) == Isa::Avx512)
    return attention_avx512(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out,
                            ldo, params);
  attention_ref(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out, ldo);
}

}  // namespace sandwich::kernels
