// AVX2 bodies of the peak probes: 12 FMA chains of 8 lanes, the stream read in 32-byte loads.
#include <immintrin.h>

#include "peak_probe_bodies.h"

// The loops' templates take this file's ISA where they are defined.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "peak_loops.h"

namespace sandwich::kernels {
namespace {

constexpr int kFmaChains = 12;  // as many as 16 ymm registers leave room for

float fma_chains(int64_t iters) {
  return peak::fma_chains<kFmaChains, __m256>(
      iters, [&](__m256 x, __m256 a, __m256 b) { return _mm256_fmadd_ps(x, a, b); });
}

uint64_t stream(const void* p, size_t bytes) {
  return peak::xor_words<__m256i>(p, bytes);
}

}  // namespace
}  // namespace sandwich::kernels

#pragma GCC pop_options

namespace sandwich::kernels {

const PeakProbeKernels kPeakProbesAvx2 = {
    Isa::Avx2, {Isa::Avx2, kFmaChains, kFmaChains * 8 * 2.0, fma_chains}, {}, stream};

}  // namespace sandwich::kernels
