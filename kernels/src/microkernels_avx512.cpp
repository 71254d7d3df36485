// AVX-512 micro-kernels: BF16 weights through vdpbf16ps (activations rounded to BF16, FP32
// accumulation) and F32 weights through FMA. Only the kernels carry the AVX-512 target, so the
// table can list them on machines that cannot run them.
#include <immintrin.h>

#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/microkernel.h"
#include "prefetch_lines.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")

// One K step of a tile with S accumulator sets: step j feeds set j % S. A and B advance by one
// step. The broadcast is the instruction's memory operand (EVEX {1to16}), so it costs a load
// slot but no register. BF16 weights: a step is a k pair of A (one 32-bit broadcast) and of B,
// through vdpbf16ps; F32: one k, through FMA.
//
// The flat accumulator array, the unroll pragmas and the compile-time flags keep every
// accumulator in a register (GCC otherwise bounces the tile through the stack).
template <DType W, int UM, int V, int S, bool ACC, int PF>
__attribute__((always_inline)) inline void body(const void* a_, const void* b_, int64_t steps,
                                                float* c, int64_t ldc, const char* pf) {
  using AElem = std::conditional_t<W == DType::BF16, uint32_t, float>;
  using BElem = std::conditional_t<W == DType::BF16, uint16_t, float>;
  constexpr int64_t kBStep = k_group(W) * kPanel;  // B elements of one step
  const auto* a = static_cast<const AElem*>(a_);
  const auto* b = static_cast<const BElem*>(b_);
  __m512 acc[S][UM * V];
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    acc[0][i] = ACC ? _mm512_loadu_ps(c + (i / V) * ldc + 16 * (i % V)) : _mm512_setzero_ps();
    if constexpr (S == 2) acc[S - 1][i] = _mm512_setzero_ps();
  }
  auto step = [&](int s, const AElem* ap, const BElem* bp, const char* pfp)
      __attribute__((always_inline)) {
    prefetch_lines<PF>(pfp);
    if constexpr (W == DType::BF16) {
      __m512bh bv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) bv[v] = (__m512bh)_mm512_load_si512(bp + 32 * v);
#pragma GCC unroll 32
      for (int m = 0; m < UM; ++m) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[m]));
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v)
          acc[s][m * V + v] = _mm512_dpbf16_ps(acc[s][m * V + v], bv[v], av);
      }
    } else {
      __m512 bv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) bv[v] = _mm512_load_ps(bp + 16 * v);
#pragma GCC unroll 32
      for (int m = 0; m < UM; ++m) {
        const __m512 av = _mm512_set1_ps(ap[m]);
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v)
          acc[s][m * V + v] = _mm512_fmadd_ps(bv[v], av, acc[s][m * V + v]);
      }
    }
  };
  int64_t j = 0;
  if constexpr (S == 2) {
    for (; j + 2 <= steps; j += 2) {
      step(0, a + j * UM, b + j * kBStep, pf + j * PF * 64);
      step(1, a + (j + 1) * UM, b + (j + 1) * kBStep, pf + (j + 1) * PF * 64);
    }
  }
  for (; j < steps; ++j) step(0, a + j * UM, b + j * kBStep, pf + j * PF * 64);
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    __m512 r = acc[0][i];
    if constexpr (S == 2) r = _mm512_add_ps(r, acc[S - 1][i]);
    _mm512_storeu_ps(c + (i / V) * ldc + 16 * (i % V), r);
  }
}

// Cache-line aligned: the inner loop then sits the same way in every build, whatever the link
// order (a tile that moved by 16 bytes was within noise, but 1-2% slower, in bench_kernels).
template <DType W, int UM, int V, int S, int PF>
__attribute__((aligned(64))) void tile(const void* a, const void* b, int64_t steps, float* c,
                                       int64_t ldc, bool accumulate, const void* pf) {
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    body<W, UM, V, S, true, PF>(a, b, steps, c, ldc, pfp);
  else
    body<W, UM, V, S, false, PF>(a, b, steps, c, ldc, pfp);
}

#pragma GCC pop_options

constexpr int kRegisters = 32;

// Two accumulator sets when one leaves the two FMA pipes waiting on their 6-cycle latency and
// the second still fits. 12 accumulators are the theoretical minimum; measured in L1 on Zen 5,
// 3x64 reaches 337 GFLOPS with one set and 4x64 436 of the 448 peak, so below 16 pays off.
constexpr int acc_sets(int um, int v) {
  return um * v < 16 && 2 * um * v + v + 1 <= kRegisters ? 2 : 1;
}
constexpr int registers(int um, int v) {
  return acc_sets(um, v) * um * v + v + 1;
}

template <DType W, int V, int UM>
MicroKernel shape() {
  constexpr int S = acc_sets(UM, V);
  static_assert(registers(UM, V) <= kRegisters);
  return {
      W == DType::BF16 ? Isa::Avx512Bf16 : Isa::Avx512,
      W,
      UM,
      16 * V,
      registers(UM, V),
      S,
      {&tile<W, UM, V, S, 0>, &tile<W, UM, V, S, 1>, &tile<W, UM, V, S, 2>, &tile<W, UM, V, S, 4>},
      {&tile<W, UM, V, 1, 0>, &tile<W, UM, V, 1, 1>, &tile<W, UM, V, 1, 2>, &tile<W, UM, V, 1, 4>}};
}

template <int V, int UM>
void add_shape(std::vector<MicroKernel>& t) {
  t.push_back(shape<DType::BF16, V, UM>());
  t.push_back(shape<DType::F32, V, UM>());
}

// Every tile height whose accumulators, B vectors and broadcast fit the 32 zmm registers.
template <int V, int... I>
void add_shapes(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (add_shape<V, I + 1>(t), ...);
}

}  // namespace

void add_avx512_microkernels(std::vector<MicroKernel>& t) {
  add_shapes<4>(t, std::make_integer_sequence<int, (kRegisters - 1 - 4) / 4>{});  // up to 6x64
  add_shapes<2>(t, std::make_integer_sequence<int, (kRegisters - 1 - 2) / 2>{});  // up to 14x32
  add_shapes<1>(t, std::make_integer_sequence<int, (kRegisters - 1 - 1) / 1>{});  // up to 30x16
}

}  // namespace sandwich::kernels
