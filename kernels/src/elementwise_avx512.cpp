// AVX-512 bodies of the row-wise operations: 16 lanes, tails through mask registers.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "elementwise_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "vec_math_avx512.h"

// GCC 12 flags _mm512_reduce_add_ps's own self-initialised temporaries (PR105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace sandwich::kernels {
namespace {

using simd::exp512;
using simd::tail_mask;

void rmsnorm_512(const float* x, const float* w, float* y, int64_t n, float eps) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
    acc1 = _mm512_fmadd_ps(b, b, acc1);
  }
  for (; i < n; i += 16) {
    __m512 a = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
  }
  const float ss = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  const __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(ss / static_cast<float>(n) + eps));
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i)));
  }
}

void rope_512(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; i += 16) {
      const __mmask16 m = tail_mask(half - i);
      const __m512 a = _mm512_maskz_loadu_ps(m, v + i), b = _mm512_maskz_loadu_ps(m, v + i + half);
      const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
      _mm512_mask_storeu_ps(v + i, m, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
      _mm512_mask_storeu_ps(v + i + half, m, _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s)));
    }
  }
}

void softmax_512(float* x, int64_t n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16)
    mx =
        _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - i), x + i));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m));
    e = _mm512_maskz_mov_ps(k, e);
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(x + i, k, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
  }
}

void silu_mul_512(const float* g, const float* u, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(k, g + i);
    const __m512 s =
        _mm512_div_ps(gv, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv))));
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(k, u + i)));
  }
}

// Whole vectors unmasked, then the tail: the residual add is short enough for its loop
// overhead to show.
void add_512(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i), _mm512_maskz_loadu_ps(k, x + i)));
  }
}

void exp_512(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, exp512(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

const ElementwiseKernels kElementwiseAvx512 = {Isa::Avx512,  rmsnorm_512, rope_512, softmax_512,
                                               silu_mul_512, add_512,     exp_512};

}  // namespace sandwich::kernels
