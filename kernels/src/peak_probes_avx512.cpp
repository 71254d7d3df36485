// AVX-512 bodies of the peak probes: 16 FMA chains of 16 lanes, 24 vdpbf16ps chains, and the
// stream read in 64-byte loads.
#include <immintrin.h>

#include "peak_probe_bodies.h"

// The loops' templates take this file's ISA where they are defined.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "peak_loops.h"

namespace sandwich::kernels {

float fma_chains_avx512(int64_t iters) {
  return peak::fma_chains<kFmaChainsAvx512, __m512>(
      iters, [&](__m512 x, __m512 a, __m512 b) { return _mm512_fmadd_ps(x, a, b); });
}

uint64_t stream_read_avx512(const void* p, size_t bytes) {
  return peak::xor_words<__m512i>(p, bytes);
}

}  // namespace sandwich::kernels

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

namespace sandwich::kernels {

float bf16_chains_avx512bf16(int64_t iters) {
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

}  // namespace sandwich::kernels

#pragma GCC pop_options
