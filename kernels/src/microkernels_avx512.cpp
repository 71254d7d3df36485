// AVX-512 micro-kernels: BF16 weights through vdpbf16ps (A rounded to BF16, FP32 accumulation)
// and F32 weights through FMA. Only the kernels carry the AVX-512 target, so this file's other
// code runs on any x86-64 and the table can list them on machines that cannot run them.
#include <immintrin.h>

#include <cstring>
#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")

// B: one 256-byte row per k pair (64 columns x 2 k); this tile reads V vectors of it.
template <int UM, int V>
void mk_bf16(const void* a_, int64_t lda, const void* b_, int64_t k, float* c, int64_t ldc, bool accumulate) {
  const auto* a = static_cast<const uint16_t*>(a_);
  const auto* b = static_cast<const uint16_t*>(b_);
  __m512 acc[UM][V];
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) acc[m][v] = accumulate ? _mm512_loadu_ps(c + m * ldc + 16 * v) : _mm512_setzero_ps();
  const int64_t pairs = k / 2;
  for (int64_t j = 0; j < pairs; ++j) {
    __m512bh bv[V];
    for (int v = 0; v < V; ++v) bv[v] = (__m512bh)_mm512_load_si512(b + j * 2 * kPanel + 32 * v);
    for (int m = 0; m < UM; ++m) {
      int32_t pair;
      std::memcpy(&pair, a + m * lda + 2 * j, 4);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      for (int v = 0; v < V; ++v) acc[m][v] = _mm512_dpbf16_ps(acc[m][v], av, bv[v]);
    }
  }
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + m * ldc + 16 * v, acc[m][v]);
}

template <int UM, int V>
void mk_f32(const void* a_, int64_t lda, const void* b_, int64_t k, float* c, int64_t ldc, bool accumulate) {
  const auto* a = static_cast<const float*>(a_);
  const auto* b = static_cast<const float*>(b_);
  __m512 acc[UM][V];
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) acc[m][v] = accumulate ? _mm512_loadu_ps(c + m * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_load_ps(b + j * kPanel + 16 * v);
    for (int m = 0; m < UM; ++m) {
      const __m512 av = _mm512_set1_ps(a[m * lda + j]);
      for (int v = 0; v < V; ++v) acc[m][v] = _mm512_fmadd_ps(av, bv[v], acc[m][v]);
    }
  }
  for (int m = 0; m < UM; ++m)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + m * ldc + 16 * v, acc[m][v]);
}

#pragma GCC pop_options

// Every tile whose accumulators, B vectors and one broadcast fit 32 registers.
template <int V, int... I>
void add_shapes(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx512Bf16, DType::BF16, I + 1, 16 * V, (I + 1) * V + V + 1, &mk_bf16<I + 1, V>}), ...);
  (t.push_back({Isa::Avx512, DType::F32, I + 1, 16 * V, (I + 1) * V + V + 1, &mk_f32<I + 1, V>}), ...);
}

}  // namespace

void add_avx512_microkernels(std::vector<MicroKernel>& t) {
  add_shapes<4>(t, std::make_integer_sequence<int, 6>{});   // 6 x 4 + 4 + 1 = 29
  add_shapes<2>(t, std::make_integer_sequence<int, 14>{});  // 14 x 2 + 2 + 1 = 31
  add_shapes<1>(t, std::make_integer_sequence<int, 30>{});  // 30 + 1 + 1 = 32
}

}  // namespace sandwich::kernels
