// The scalar reference of attention (double sums, a plain two-pass softmax): the fallback
// where no vector body applies, and what the vector bodies are tested against.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention_kernels.h"

namespace sandwich::kernels {

namespace {

inline float widen(float x) {
  return x;
}
inline float widen(bf16_t x) {
  return bf16_to_f32(x);
}

template <class T>
void attention_ref_of(const PagedKV& kv, const int32_t* block_table, int32_t kv_head,
                      const float* q, int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos,
                      float scale, float* out, int64_t ldo) {
  const int32_t hd = kv.head_dim;
  std::vector<float> scores;
  for (int32_t t = 0; t < n_tok; ++t) {
    const int32_t n_ctx = start_pos + t + 1;
    for (int32_t g = 0; g < group; ++g) {
      const float* qr = q + t * ldq + int64_t{g} * hd;
      scores.assign(n_ctx, 0.0f);
      for (int32_t p = 0; p < n_ctx; ++p) {
        const T* kb = kv.key<T>(block_table[p / kKVBlock], kv_head) + p % kKVBlock;
        double s = 0;
        for (int32_t d = 0; d < hd; ++d)
          s += static_cast<double>(qr[d]) * widen(kb[int64_t{d} * kKVBlock]);
        scores[p] = static_cast<float>(s) * scale;
      }
      float mx = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (auto& s : scores) sum += (s = std::exp(s - mx));
      float* o = out + t * ldo + int64_t{g} * hd;
      for (int32_t d = 0; d < hd; ++d) {
        double acc = 0;
        for (int32_t p = 0; p < n_ctx; ++p)
          acc += static_cast<double>(scores[p]) *
                 widen(kv.value<T>(block_table[p / kKVBlock],
                                   kv_head)[int64_t{p % kKVBlock} * hd + d]);
        o[d] = static_cast<float>(acc / sum);
      }
    }
  }
}

// The reference has no block sizes.
void run_ref(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
             int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale, float* out,
             int64_t ldo, const AttentionParams&) {
  attention_ref(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out, ldo);
}

bool any_head(int32_t) {
  return true;
}

}  // namespace

void attention_ref(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
                   int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
                   float* out, int64_t ldo) {
  switch (kv.dtype) {
    case DType::F32:
      return attention_ref_of<float>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos,
                                     scale, out, ldo);
    case DType::BF16:
      return attention_ref_of<bf16_t>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos,
                                      scale, out, ldo);
    default:
      throw std::invalid_argument("attention_ref: the KV cache holds f32 or bf16");
  }
}

const AttentionKernels kAttentionScalar = {Isa::Scalar, any_head, run_ref};

}  // namespace sandwich::kernels
