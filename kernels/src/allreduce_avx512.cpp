// AVX-512 sums of the all-reduce: 16 lanes per step, the sources added in rank order; BF16
// widened to FP32 and rounded back by vcvtneps2bf16 (round to nearest even, as f32_to_bf16).
#include <immintrin.h>

#include "allreduce_sum.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")

void sum_f32(const float* const* src, int R, size_t n, float* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 s = _mm512_loadu_ps(src[0] + i);
    for (int q = 1; q < R; ++q) s = _mm512_add_ps(s, _mm512_loadu_ps(src[q] + i));
    _mm512_storeu_ps(out + i, s);
  }
  sum_tail(src, R, i, n, out);
}

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

void sum_bf16(const bf16_t* const* src, int R, size_t n, bf16_t* out) {
  auto widen = [&](const bf16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 s = widen(src[0] + i);
    for (int q = 1; q < R; ++q) s = _mm512_add_ps(s, widen(src[q] + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)_mm512_cvtneps_pbh(s));
  }
  sum_tail(src, R, i, n, out);
}

#pragma GCC pop_options

}  // namespace

const AllReduceSums kAllReduceAvx512 = {Isa::Avx512, sum_f32, nullptr};
const AllReduceSums kAllReduceAvx512Bf16 = {Isa::Avx512Bf16, nullptr, sum_bf16};

}  // namespace sandwich::kernels
