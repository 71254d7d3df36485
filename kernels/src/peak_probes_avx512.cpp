// AVX-512 bodies of the peak probes: 16 FMA chains of 16 lanes, 24 vdpbf16ps chains, and the
// stream read in 64-byte loads.
#include <immintrin.h>

#include "peak_probe_bodies.h"

// The loops' templates take this file's ISA where they are defined.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "peak_loops.h"

namespace sandwich::kernels {
namespace {

constexpr int kFmaChains = 16;  // 2 FMA pipes of latency 4 need 8 in flight
constexpr int kBf16Chains = 24;

float fma_chains(int64_t iters) {
  return peak::fma_chains<kFmaChains, __m512>(
      iters, [&](__m512 x, __m512 a, __m512 b) { return _mm512_fmadd_ps(x, a, b); });
}

uint64_t stream(const void* p, size_t bytes) {
  return peak::xor_words<__m512i>(p, bytes);
}

}  // namespace
}  // namespace sandwich::kernels

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

namespace sandwich::kernels {
namespace {

float bf16_chains(int64_t iters) {
  __m512 acc[kBf16Chains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // the BF16 pair (1, 1)
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int j = 0; j < kBf16Chains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], b, b);
  }
  for (int j = 1; j < kBf16Chains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return acc[0][0];
}

}  // namespace
}  // namespace sandwich::kernels

#pragma GCC pop_options

namespace sandwich::kernels {

const PeakProbeKernels kPeakProbesAvx512 = {
    Isa::Avx512, {Isa::Avx512, kFmaChains, kFmaChains * 16 * 2.0, fma_chains}, {}, stream};
// A vdpbf16ps lane: two products and two adds.
const PeakProbeKernels kPeakProbesAvx512Bf16 = {
    Isa::Avx512Bf16, {}, {Isa::Avx512Bf16, kBf16Chains, kBf16Chains * 16 * 4.0, bf16_chains}, {}};

}  // namespace sandwich::kernels
