// AVX2 bodies of the row-wise operations: 8 lanes; whole vectors use plain loads and stores, the
// tail of a row one masked step (masked stores are slow on some CPUs, so only the tail pays).
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "elementwise_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "vec_math_avx2.h"

namespace sandwich::kernels {
namespace {

using simd::exp256;
using simd::reduce_add8;
using simd::reduce_max8;
using simd::tail_mask8;

// The lanes of a step: all 8 (Whole) or the tail's (a lane mask).
struct Whole {};

inline __m256 load(const float* p, Whole) {
  return _mm256_loadu_ps(p);
}
inline __m256 load(const float* p, __m256i m) {
  return _mm256_maskload_ps(p, m);
}
inline void store(float* p, __m256 v, Whole) {
  _mm256_storeu_ps(p, v);
}
inline void store(float* p, __m256 v, __m256i m) {
  _mm256_maskstore_ps(p, m, v);
}
// v with the lanes outside the step set to `fill`.
inline __m256 only(__m256 v, Whole, __m256) {
  return v;
}
inline __m256 only(__m256 v, __m256i m, __m256 fill) {
  return _mm256_blendv_ps(fill, v, _mm256_castsi256_ps(m));
}

// f(i, lanes) for the 8-lane steps of [0, n).
template <class F>
inline void steps8(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) f(i, Whole{});
  if (i < n) f(i, tail_mask8(n - i));
}

void rmsnorm_256(const float* x, const float* w, float* y, int64_t n, float eps) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    acc1 = _mm256_fmadd_ps(b, b, acc1);
  }
  const float* rest = x + i;
  steps8(n - i, [&](int64_t j, auto lanes) {
    const __m256 a = load(rest + j, lanes);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
  });
  const float ss = reduce_add8(_mm256_add_ps(acc0, acc1));
  const __m256 inv = _mm256_set1_ps(1.0f / std::sqrt(ss / static_cast<float>(n) + eps));
  steps8(n, [&](int64_t j, auto lanes) {
    const __m256 v = _mm256_mul_ps(load(x + j, lanes), inv);
    store(y + j, _mm256_mul_ps(v, load(w + j, lanes)), lanes);
  });
}

void rope_256(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    steps8(half, [&](int64_t i, auto lanes) {
      const __m256 a = load(v + i, lanes), b = load(v + i + half, lanes);
      const __m256 c = load(cos + i, lanes), s = load(sin + i, lanes);
      store(v + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)), lanes);
      store(v + i + half, _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s)), lanes);
    });
  }
}

void softmax_256(float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
  __m256 mx = neg_inf;
  steps8(n, [&](int64_t i, auto lanes) {
    mx = _mm256_max_ps(mx, only(load(x + i, lanes), lanes, neg_inf));
  });
  const __m256 m = _mm256_set1_ps(reduce_max8(mx));
  __m256 sum = zero;
  steps8(n, [&](int64_t i, auto lanes) {
    const __m256 e = only(exp256(_mm256_sub_ps(load(x + i, lanes), m)), lanes, zero);
    sum = _mm256_add_ps(sum, e);
    store(x + i, e, lanes);
  });
  const __m256 inv = _mm256_set1_ps(1.0f / reduce_add8(sum));
  steps8(n, [&](int64_t i, auto lanes) {
    store(x + i, _mm256_mul_ps(load(x + i, lanes), inv), lanes);
  });
}

void silu_mul_256(const float* g, const float* u, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  steps8(n, [&](int64_t i, auto lanes) {
    const __m256 gv = load(g + i, lanes);
    const __m256 s =
        _mm256_div_ps(gv, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
    store(out + i, _mm256_mul_ps(s, load(u + i, lanes)), lanes);
  });
}

void add_256(float* y, const float* x, int64_t n) {
  steps8(n, [&](int64_t i, auto lanes) {
    store(y + i, _mm256_add_ps(load(y + i, lanes), load(x + i, lanes)), lanes);
  });
}

void exp_256(float* x, int64_t n) {
  steps8(n, [&](int64_t i, auto lanes) { store(x + i, exp256(load(x + i, lanes)), lanes); });
}

#pragma GCC pop_options

}  // namespace

const ElementwiseKernels kElementwiseAvx2 = {Isa::Avx2,    rmsnorm_256, rope_256, softmax_256,
                                             silu_mul_256, add_256,     exp_256};

}  // namespace sandwich::kernels
