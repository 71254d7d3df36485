// Attention's policy: the paged KV writes, and which body runs a call.
#include "kernels/attention.h"

#include <stdexcept>
#include <string>

#include "attention_kernels.h"
#include "isa_table.h"

namespace sandwich::kernels {

namespace {

// The widest body this CPU allows, else the reference where that body does not take the head.
const AttentionKernels& body_for(int32_t head_dim) {
  static const AttentionKernels& widest =
      pick_isa_table({&kAttentionAvx512, &kAttentionAvx2, &kAttentionScalar});
  return widest.fits(head_dim) ? widest : kAttentionScalar;
}

void check_dtype(const PagedKV& kv) {
  if (!kv_dtype_supported(kv.dtype))
    throw std::invalid_argument("the KV cache cannot hold " + std::string(dtype_name(kv.dtype)) +
                                " (f32 or bf16)");
}

inline void put(float* dst, float x) {
  *dst = x;
}
inline void put(bf16_t* dst, float x) {
  *dst = f32_to_bf16(x);
}

template <class T>
void store(const PagedKV& kv, const int32_t* block_table, int32_t pos, int32_t h0, int32_t h1,
           const float* k, const float* v) {
  const int32_t block = block_table[pos / kKVBlock];
  const int32_t slot = pos % kKVBlock;
  const int32_t hd = kv.head_dim;
  for (int32_t h = h0; h < h1; ++h) {
    const float* kh = k + int64_t{h - h0} * hd;
    const float* vh = v + int64_t{h - h0} * hd;
    T* kd = kv.key<T>(block, h) + slot;
    for (int32_t d = 0; d < hd; ++d) put(kd + int64_t{d} * kKVBlock, kh[d]);
    T* vd = kv.value<T>(block, h) + int64_t{slot} * hd;
    for (int32_t d = 0; d < hd; ++d) put(vd + d, vh[d]);
  }
}

}  // namespace

void kv_store(const PagedKV& kv, const int32_t* block_table, int32_t pos, int32_t h0, int32_t h1,
              const float* k, const float* v) {
  check_dtype(kv);
  if (kv.dtype == DType::BF16) return store<bf16_t>(kv, block_table, pos, h0, h1, k, v);
  store<float>(kv, block_table, pos, h0, h1, k, v);
}

Isa attention_isa(int32_t head_dim) {
  return body_for(head_dim).isa;
}

void attention(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
               int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
               float* out, int64_t ldo, const AttentionParams& params) {
  check_dtype(kv);
  body_for(kv.head_dim)
      .run(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out, ldo, params);
}

}  // namespace sandwich::kernels
