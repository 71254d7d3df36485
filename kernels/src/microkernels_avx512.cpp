// AVX-512 micro-kernels: BF16 weights through vdpbf16ps (activations rounded to BF16, FP32
// accumulation) and F32 weights through FMA. Only the kernels carry the AVX-512 target, so the
// table can list them on machines that cannot run them.
#include <immintrin.h>

#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")

// PF cache lines from pf into L2: the B chunk the driver will need next, spread over the steps
// of the tiles that precede it, so DRAM streaming overlaps the arithmetic.
template <int PF>
__attribute__((always_inline)) inline void prefetch_lines(const char* pf) {
#pragma GCC unroll 4
  for (int l = 0; l < PF; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
}

// One K step of a tile with S accumulator sets: step j feeds set j % S. A and B advance by one
// step. The broadcast is the instruction's memory operand (EVEX {1to16}), so it costs a load
// slot but no register.
//
// The flat accumulator array, the unroll pragmas and the compile-time flags keep every
// accumulator in a register (GCC otherwise bounces the tile through the stack).
template <int UM, int V, int S, bool ACC, int PF>
__attribute__((always_inline)) inline void bf16_body(const uint32_t* a, const uint16_t* b,
                                                     int64_t steps, float* c, int64_t ldc,
                                                     const char* pf) {
  __m512 acc[S][UM * V];
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    acc[0][i] = ACC ? _mm512_loadu_ps(c + (i / V) * ldc + 16 * (i % V)) : _mm512_setzero_ps();
    if constexpr (S == 2) acc[S - 1][i] = _mm512_setzero_ps();
  }
  auto step = [&](int s, const uint32_t* ap, const uint16_t* bp, const char* pfp)
      __attribute__((always_inline)) {
    prefetch_lines<PF>(pfp);
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
  };
  int64_t j = 0;
  if constexpr (S == 2) {
    for (; j + 2 <= steps; j += 2) {
      step(0, a + j * UM, b + j * 2 * kPanel, pf + j * PF * 64);
      step(1, a + (j + 1) * UM, b + (j + 1) * 2 * kPanel, pf + (j + 1) * PF * 64);
    }
  }
  for (; j < steps; ++j) step(0, a + j * UM, b + j * 2 * kPanel, pf + j * PF * 64);
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    __m512 r = acc[0][i];
    if constexpr (S == 2) r = _mm512_add_ps(r, acc[S - 1][i]);
    _mm512_storeu_ps(c + (i / V) * ldc + 16 * (i % V), r);
  }
}

template <int UM, int V, int S, bool ACC, int PF>
__attribute__((always_inline)) inline void f32_body(const float* a, const float* b, int64_t steps,
                                                    float* c, int64_t ldc, const char* pf) {
  __m512 acc[S][UM * V];
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    acc[0][i] = ACC ? _mm512_loadu_ps(c + (i / V) * ldc + 16 * (i % V)) : _mm512_setzero_ps();
    if constexpr (S == 2) acc[S - 1][i] = _mm512_setzero_ps();
  }
  auto step = [&](int s, const float* ap, const float* bp, const char* pfp)
      __attribute__((always_inline)) {
    prefetch_lines<PF>(pfp);
    __m512 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) bv[v] = _mm512_load_ps(bp + 16 * v);
#pragma GCC unroll 32
    for (int m = 0; m < UM; ++m) {
      const __m512 av = _mm512_set1_ps(ap[m]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[s][m * V + v] = _mm512_fmadd_ps(bv[v], av, acc[s][m * V + v]);
    }
  };
  int64_t j = 0;
  if constexpr (S == 2) {
    for (; j + 2 <= steps; j += 2) {
      step(0, a + j * UM, b + j * kPanel, pf + j * PF * 64);
      step(1, a + (j + 1) * UM, b + (j + 1) * kPanel, pf + (j + 1) * PF * 64);
    }
  }
  for (; j < steps; ++j) step(0, a + j * UM, b + j * kPanel, pf + j * PF * 64);
#pragma GCC unroll 64
  for (int i = 0; i < UM * V; ++i) {
    __m512 r = acc[0][i];
    if constexpr (S == 2) r = _mm512_add_ps(r, acc[S - 1][i]);
    _mm512_storeu_ps(c + (i / V) * ldc + 16 * (i % V), r);
  }
}

template <int UM, int V, int S, int PF>
void bf16_tile(const void* a, const void* b, int64_t steps, float* c, int64_t ldc, bool accumulate,
               const void* pf) {
  const auto* ap = static_cast<const uint32_t*>(a);
  const auto* bp = static_cast<const uint16_t*>(b);
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    bf16_body<UM, V, S, true, PF>(ap, bp, steps, c, ldc, pfp);
  else
    bf16_body<UM, V, S, false, PF>(ap, bp, steps, c, ldc, pfp);
}

template <int UM, int V, int S, int PF>
void f32_tile(const void* a, const void* b, int64_t steps, float* c, int64_t ldc, bool accumulate,
              const void* pf) {
  const auto* ap = static_cast<const float*>(a);
  const auto* bp = static_cast<const float*>(b);
  const auto* pfp = static_cast<const char*>(pf);
  if (accumulate)
    f32_body<UM, V, S, true, PF>(ap, bp, steps, c, ldc, pfp);
  else
    f32_body<UM, V, S, false, PF>(ap, bp, steps, c, ldc, pfp);
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

template <int V, int UM>
void add_shape(std::vector<MicroKernel>& t) {
  constexpr int S = acc_sets(UM, V);
  static_assert(registers(UM, V) <= kRegisters);
  t.push_back({Isa::Avx512Bf16,
               DType::BF16,
               UM,
               16 * V,
               registers(UM, V),
               S,
               {&bf16_tile<UM, V, S, 0>, &bf16_tile<UM, V, S, 1>, &bf16_tile<UM, V, S, 2>,
                &bf16_tile<UM, V, S, 4>}});
  t.push_back({Isa::Avx512,
               DType::F32,
               UM,
               16 * V,
               registers(UM, V),
               S,
               {&f32_tile<UM, V, S, 0>, &f32_tile<UM, V, S, 1>, &f32_tile<UM, V, S, 2>,
                &f32_tile<UM, V, S, 4>}});
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
