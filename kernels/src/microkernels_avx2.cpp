// AVX2 + FMA micro-kernels (16 ymm registers): F32 weights, and BF16 weights widened to F32 in
// registers (a BF16 pair (lo, hi) in a 32-bit lane gives lo as lane << 16 and hi as the lane
// with its low half cleared). A stays F32.
#include <immintrin.h>

#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma")

template <int UM, int V>
void mk_bf16(const void* a_, int64_t lda, const void* b_, int64_t k, float* c, int64_t ldc, bool accumulate) {
  const auto* a = static_cast<const float*>(a_);
  const auto* b = static_cast<const uint16_t*>(b_);
  __m256 acc[UM][V];
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) acc[m][v] = accumulate ? _mm256_loadu_ps(c + m * ldc + 8 * v) : _mm256_setzero_ps();
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const int64_t pairs = k / 2;
  for (int64_t j = 0; j < pairs; ++j) {
    for (int v = 0; v < V; ++v) {
      const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + j * 2 * kPanel + 16 * v));
      const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
      const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(raw, hi_mask));
      for (int m = 0; m < UM; ++m) {
        acc[m][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * lda + 2 * j), even, acc[m][v]);
        acc[m][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * lda + 2 * j + 1), odd, acc[m][v]);
      }
    }
  }
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(c + m * ldc + 8 * v, acc[m][v]);
}

template <int UM, int V>
void mk_f32(const void* a_, int64_t lda, const void* b_, int64_t k, float* c, int64_t ldc, bool accumulate) {
  const auto* a = static_cast<const float*>(a_);
  const auto* b = static_cast<const float*>(b_);
  __m256 acc[UM][V];
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) acc[m][v] = accumulate ? _mm256_loadu_ps(c + m * ldc + 8 * v) : _mm256_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    for (int v = 0; v < V; ++v) {
      const __m256 bv = _mm256_load_ps(b + j * kPanel + 8 * v);
      for (int m = 0; m < UM; ++m) acc[m][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * lda + j), bv, acc[m][v]);
    }
  }
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(c + m * ldc + 8 * v, acc[m][v]);
}

#pragma GCC pop_options

// BF16 tiles need the accumulators, the even/odd halves of one B vector and two broadcasts
// (UM*V + 4 <= 16); F32 tiles the accumulators, one B vector and one broadcast (UM*V + 2 <= 16).
template <int V, int... I>
void add_bf16(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx2, DType::BF16, I + 1, 8 * V, (I + 1) * V + 4, &mk_bf16<I + 1, V>}), ...);
}
template <int V, int... I>
void add_f32(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx2, DType::F32, I + 1, 8 * V, (I + 1) * V + 2, &mk_f32<I + 1, V>}), ...);
}

}  // namespace

void add_avx2_microkernels(std::vector<MicroKernel>& t) {
  add_bf16<8>(t, std::make_integer_sequence<int, 1>{});
  add_bf16<4>(t, std::make_integer_sequence<int, 3>{});
  add_bf16<2>(t, std::make_integer_sequence<int, 6>{});
  add_bf16<1>(t, std::make_integer_sequence<int, 12>{});
  add_f32<8>(t, std::make_integer_sequence<int, 1>{});
  add_f32<4>(t, std::make_integer_sequence<int, 3>{});
  add_f32<2>(t, std::make_integer_sequence<int, 7>{});
  add_f32<1>(t, std::make_integer_sequence<int, 14>{});
}

}  // namespace sandwich::kernels
