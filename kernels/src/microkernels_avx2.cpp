// AVX2 + FMA micro-kernels (16 ymm registers) for CPUs without AVX-512: F32 weights, and BF16
// weights widened to F32 in registers (a BF16 pair (lo, hi) in a 32-bit lane gives lo as
// lane << 16 and hi as the lane with its low half cleared). Activations stay F32.
#include <immintrin.h>

#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/microkernel.h"
#include "prefetch_lines.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// One K step feeds every accumulator: F32 weights one k (a B vector times a broadcast per row),
// BF16 weights a k pair (the even and odd halves of a B vector, each times its broadcast).
template <DType W, int UM, int V, bool ACC, int PF>
__attribute__((always_inline)) inline void body(const float* a, const void* b_, int64_t steps,
                                                float* c, int64_t ldc, const char* pf) {
  using BElem = std::conditional_t<W == DType::BF16, uint16_t, float>;
  constexpr int g = k_group(W);
  const auto* b = static_cast<const BElem*>(b_);
  __m256 acc[UM * V];
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i)
    acc[i] = ACC ? _mm256_loadu_ps(c + (i / V) * ldc + 8 * (i % V)) : _mm256_setzero_ps();
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t j = 0; j < steps; ++j) {
    const BElem* bp = b + j * g * kPanel;
    const float* ap = a + j * g * UM;
    prefetch_lines<PF>(pf + j * PF * 64);
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      if constexpr (W == DType::BF16) {
        const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp + 16 * v));
        const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
        const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(raw, hi_mask));
#pragma GCC unroll 16
        for (int m = 0; m < UM; ++m) {
          acc[m * V + v] = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 2 * m), even, acc[m * V + v]);
          acc[m * V + v] =
              _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 2 * m + 1), odd, acc[m * V + v]);
        }
      } else {
        const __m256 bv = _mm256_load_ps(bp + 8 * v);
#pragma GCC unroll 16
        for (int m = 0; m < UM; ++m)
          acc[m * V + v] = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + m), bv, acc[m * V + v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < UM * V; ++i) _mm256_storeu_ps(c + (i / V) * ldc + 8 * (i % V), acc[i]);
}

// Cache-line aligned: the inner loop then sits the same way in every build, whatever the link
// order (a tile that moved by 16 bytes was within noise, but 1-2% slower, in bench_kernels).
template <DType W, int UM, int V, int PF>
__attribute__((aligned(64))) void tile(const void* a, const void* b, int64_t steps, float* c,
                                       int64_t ldc, bool accumulate, const void* pf) {
  const auto* ap = static_cast<const float*>(a);
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    body<W, UM, V, true, PF>(ap, b, steps, c, ldc, pfp);
  else
    body<W, UM, V, false, PF>(ap, b, steps, c, ldc, pfp);
}

#pragma GCC pop_options

constexpr int kRegisters = 16;
// The accumulators, plus for BF16 the even/odd halves of one B vector and two broadcasts, for
// F32 one B vector and one broadcast.
constexpr int registers(DType w, int um, int v) {
  return um * v + (w == DType::BF16 ? 4 : 2);
}

template <DType W, int V, int... I>
void add(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Avx2,
                W,
                I + 1,
                8 * V,
                registers(W, I + 1, V),
                1,
                {&tile<W, I + 1, V, 0>, &tile<W, I + 1, V, 1>, &tile<W, I + 1, V, 2>,
                 &tile<W, I + 1, V, 4>},
                {&tile<W, I + 1, V, 0>, &tile<W, I + 1, V, 1>, &tile<W, I + 1, V, 2>,
                 &tile<W, I + 1, V, 4>}}),
   ...);
}
// Every height whose registers fit the 16 ymm.
template <DType W, int V>
void add(std::vector<MicroKernel>& t) {
  add<W, V>(t, std::make_integer_sequence<int, (kRegisters - registers(W, 0, V)) / V>{});
}

}  // namespace

// Every tile with un dividing the panel whose registers fit the 16 ymm.
void add_avx2_microkernels(std::vector<MicroKernel>& t) {
  add<DType::BF16, 8>(t);  // 1x64
  add<DType::BF16, 4>(t);  // up to 3x32
  add<DType::BF16, 2>(t);  // up to 6x16
  add<DType::BF16, 1>(t);  // up to 12x8
  add<DType::F32, 8>(t);   // 1x64
  add<DType::F32, 4>(t);   // up to 3x32
  add<DType::F32, 2>(t);   // up to 7x16
  add<DType::F32, 1>(t);   // up to 14x8
}

}  // namespace sandwich::kernels
