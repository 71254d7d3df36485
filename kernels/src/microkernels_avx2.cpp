// AVX2 + FMA micro-kernels (16 ymm registers) for CPUs without AVX-512: F32 weights, and BF16
// weights widened to F32 in registers (a BF16 pair (lo, hi) in a 32-bit lane gives lo as
// lane << 16 and hi as the lane with its low half cleared). Activations stay F32.
#include <immintrin.h>

#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma")

template <int PF>
__attribute__((always_inline)) inline void prefetch_lines(const char* pf) {
#pragma GCC unroll 4
  for (int l = 0; l < PF; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
}

template <int UM, int V, bool ACC, int PF>
__attribute__((always_inline)) inline void bf16_body(const float* a, const uint16_t* b,
                                                     int64_t steps, float* c, int64_t ldc,
                                                     const char* pf) {
  __m256 acc[UM * V];
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i)
    acc[i] = ACC ? _mm256_loadu_ps(c + (i / V) * ldc + 8 * (i % V)) : _mm256_setzero_ps();
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t j = 0; j < steps; ++j) {
    const uint16_t* bp = b + j * 2 * kPanel;
    const float* ap = a + j * 2 * UM;
    prefetch_lines<PF>(pf + j * PF * 64);
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp + 16 * v));
      const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
      const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(raw, hi_mask));
#pragma GCC unroll 16
      for (int m = 0; m < UM; ++m) {
        acc[m * V + v] = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 2 * m), even, acc[m * V + v]);
        acc[m * V + v] = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 2 * m + 1), odd, acc[m * V + v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i) _mm256_storeu_ps(c + (i / V) * ldc + 8 * (i % V), acc[i]);
}

template <int UM, int V, bool ACC, int PF>
__attribute__((always_inline)) inline void f32_body(const float* a, const float* b, int64_t steps,
                                                    float* c, int64_t ldc, const char* pf) {
  __m256 acc[UM * V];
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i)
    acc[i] = ACC ? _mm256_loadu_ps(c + (i / V) * ldc + 8 * (i % V)) : _mm256_setzero_ps();
  for (int64_t j = 0; j < steps; ++j) {
    const float* bp = b + j * kPanel;
    const float* ap = a + j * UM;
    prefetch_lines<PF>(pf + j * PF * 64);
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m256 bv = _mm256_load_ps(bp + 8 * v);
#pragma GCC unroll 16
      for (int m = 0; m < UM; ++m)
        acc[m * V + v] = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + m), bv, acc[m * V + v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i) _mm256_storeu_ps(c + (i / V) * ldc + 8 * (i % V), acc[i]);
}

template <int UM, int V, int PF>
void bf16_tile(const void* a, const void* b, int64_t steps, float* c, int64_t ldc, bool accumulate,
               const void* pf) {
  const auto* ap = static_cast<const float*>(a);
  const auto* bp = static_cast<const uint16_t*>(b);
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    bf16_body<UM, V, true, PF>(ap, bp, steps, c, ldc, pfp);
  else
    bf16_body<UM, V, false, PF>(ap, bp, steps, c, ldc, pfp);
}

template <int UM, int V, int PF>
void f32_tile(const void* a, const void* b, int64_t steps, float* c, int64_t ldc, bool accumulate,
              const void* pf) {
  const auto* ap = static_cast<const float*>(a);
  const auto* bp = static_cast<const float*>(b);
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    f32_body<UM, V, true, PF>(ap, bp, steps, c, ldc, pfp);
  else
    f32_body<UM, V, false, PF>(ap, bp, steps, c, ldc, pfp);
}

#pragma GCC pop_options

constexpr int kRegisters = 16;
// BF16: the accumulators, the even/odd halves of one B vector and two broadcasts.
constexpr int bf16_registers(int um, int v) {
  return um * v + 4;
}
// F32: the accumulators, one B vector and one broadcast.
constexpr int f32_registers(int um, int v) {
  return um * v + 2;
}

template <int V, int... I>
void add_bf16(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx2,
                DType::BF16,
                I + 1,
                8 * V,
                bf16_registers(I + 1, V),
                1,
                {&bf16_tile<I + 1, V, 0>, &bf16_tile<I + 1, V, 1>, &bf16_tile<I + 1, V, 2>,
                 &bf16_tile<I + 1, V, 4>}}),
   ...);
}
template <int V, int... I>
void add_f32(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx2,
                DType::F32,
                I + 1,
                8 * V,
                f32_registers(I + 1, V),
                1,
                {&f32_tile<I + 1, V, 0>, &f32_tile<I + 1, V, 1>, &f32_tile<I + 1, V, 2>,
                 &f32_tile<I + 1, V, 4>}}),
   ...);
}

}  // namespace

// Every tile with un dividing the panel whose registers fit the 16 ymm.
void add_avx2_microkernels(std::vector<MicroKernel>& t) {
  add_bf16<8>(t, std::make_integer_sequence<int, (kRegisters - 4) / 8>{});  // 1x64
  add_bf16<4>(t, std::make_integer_sequence<int, (kRegisters - 4) / 4>{});  // up to 3x32
  add_bf16<2>(t, std::make_integer_sequence<int, (kRegisters - 4) / 2>{});  // up to 6x16
  add_bf16<1>(t, std::make_integer_sequence<int, (kRegisters - 4) / 1>{});  // up to 12x8
  add_f32<8>(t, std::make_integer_sequence<int, (kRegisters - 2) / 8>{});   // 1x64
  add_f32<4>(t, std::make_integer_sequence<int, (kRegisters - 2) / 4>{});   // up to 3x32
  add_f32<2>(t, std::make_integer_sequence<int, (kRegisters - 2) / 2>{});   // up to 7x16
  add_f32<1>(t, std::make_integer_sequence<int, (kRegisters - 2) / 1>{});   // up to 14x8
}

}  // namespace sandwich::kernels
