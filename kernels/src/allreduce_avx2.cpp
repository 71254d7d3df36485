// AVX2 sums of the all-reduce: 8 lanes per step, the sources added in rank order; BF16 widened
// to FP32 and rounded back with integer ops exactly as f32_to_bf16 does (NaNs quieted).
#include <immintrin.h>

#include "allreduce_sum.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma")

void sum_f32(const float* const* src, int R, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 s = _mm256_loadu_ps(src[0] + i);
    for (int q = 1; q < R; ++q) s = _mm256_add_ps(s, _mm256_loadu_ps(src[q] + i));
    _mm256_storeu_ps(out + i, s);
  }
  sum_tail(src, R, i, n, out);
}

inline __m256 widen(const bf16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// f32_to_bf16 on 8 lanes, the results in the low 16 bits of each.
inline __m256i round_bf16(__m256 s) {
  const __m256i u = _mm256_castps_si256(s);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

void sum_bf16(const bf16_t* const* src, int R, size_t n, bf16_t* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 lo = widen(src[0] + i), hi = widen(src[0] + i + 8);
    for (int q = 1; q < R; ++q) {
      lo = _mm256_add_ps(lo, widen(src[q] + i));
      hi = _mm256_add_ps(hi, widen(src[q] + i + 8));
    }
    // packus interleaves the 128-bit halves; the permute puts the 16 values back in order.
    const __m256i packed = _mm256_packus_epi32(round_bf16(lo), round_bf16(hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permute4x64_epi64(packed, 0b11011000));
  }
  sum_tail(src, R, i, n, out);
}

#pragma GCC pop_options

}  // namespace

const AllReduceSums kAllReduceAvx2 = {Isa::Avx2, sum_f32, sum_bf16};

}  // namespace sandwich::kernels
