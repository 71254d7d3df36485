#pragma once
// Vector math shared by the AVX2 kernels of this module: the 8-lane counterparts of
// vec_math_avx512.h, with tails as lane masks since AVX2 has no mask registers. Include it
// inside the kernel file's AVX2 `#pragma GCC target` region.
#include <immintrin.h>

#include <cstdint>

#include "vec_exp.h"

namespace sandwich::kernels::simd {

// e^x on 8 lanes (vec_exp.h). AVX2 has no vscalefps: 2^n is applied as two exponent-field
// powers (n split in halves), so results near FLT_MAX and in the denormal range come out as
// exp512's do instead of overflowing the exponent field.
inline __m256 exp256(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.8f), lo = _mm256_set1_ps(-87.3f);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 p = exp_remainder(
      x, n, [&](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); },
      [&](__m256 a, __m256 b, __m256 c) { return _mm256_fnmadd_ps(a, b, c); });
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_andnot_ps(under, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}

// Lanes [0, min(n, 8)) set: the mask of maskload/maskstore for a tail of n values.
inline __m256i tail_mask8(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 8 ? n : 8)), lanes);
}

inline float reduce_add8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float reduce_max8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace sandwich::kernels::simd
