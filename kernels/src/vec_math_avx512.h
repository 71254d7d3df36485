#pragma once
// Vector math shared by the AVX-512 kernels of this module (which ISA runs is cpu_has()'s call).
// Include it inside the kernel file's AVX-512 `#pragma GCC target` region.
#include <immintrin.h>

#include <cstdint>

#include "vec_exp.h"

namespace sandwich::kernels::simd {

// e^x on 16 lanes (vec_exp.h); inputs below -87.3 flush to 0, above ln(FLT_MAX) overflow to inf.
inline __m512 exp512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.8f), lo = _mm512_set1_ps(-87.3f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 p = exp_remainder(
      x, n, [&](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); },
      [&](__m512 a, __m512 b, __m512 c) { return _mm512_fnmadd_ps(a, b, c); });
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_scalef_ps(p, n));
}

inline __mmask16 tail_mask(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
}

}  // namespace sandwich::kernels::simd
