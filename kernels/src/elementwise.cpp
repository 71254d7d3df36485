#include "kernels/elementwise.h"

#include <algorithm>
#include <cmath>

#include "vec_math.h"

namespace sandwich::kernels {

// ---- scalar references ---------------------------------------------------------------------

void rmsnorm_ref(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[i];
}

void rope_ref(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

void softmax_ref(float* x, int64_t n) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// ---- AVX-512 -------------------------------------------------------------------------------
namespace {

using simd::exp512;
using simd::tail_mask;

__attribute__((target("avx512f"))) void rmsnorm_512(const float* x, const float* w, float* y,
                                                    int64_t n, float eps) {
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

__attribute__((target("avx512f"))) void rope_512(float* x, int n_heads, int head_dim,
                                                 const float* cos, const float* sin) {
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

__attribute__((target("avx512f"))) void softmax_512(float* x, int64_t n) {
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

__attribute__((target("avx512f"))) void silu_mul_512(const float* g, const float* u, float* out,
                                                     int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(k, g + i);
    const __m512 s =
        _mm512_div_ps(gv, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv))));
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(k, u + i)));
  }
}

__attribute__((target("avx512f"))) void add_512(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i), _mm512_maskz_loadu_ps(k, x + i)));
  }
}

__attribute__((target("avx512f"))) void exp_512(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, exp512(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

}  // namespace

// ---- dispatch ------------------------------------------------------------------------------

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  if (simd::has_avx512()) return rmsnorm_512(x, w, y, n, eps);
  rmsnorm_ref(x, w, y, n, eps);
}

void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  if (simd::has_avx512()) return rope_512(x, n_heads, head_dim, cos, sin);
  rope_ref(x, n_heads, head_dim, cos, sin);
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  if (simd::has_avx512()) return softmax_512(x, n);
  softmax_ref(x, n);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  if (simd::has_avx512()) return silu_mul_512(gate, up, out, n);
  silu_mul_ref(gate, up, out, n);
}

void add_inplace(float* y, const float* x, int64_t n) {
  if (simd::has_avx512()) return add_512(y, x, n);
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void exp_inplace(float* x, int64_t n) {
  if (simd::has_avx512()) return exp_512(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

}  // namespace sandwich::kernels
