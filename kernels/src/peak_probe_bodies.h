#pragma once
// The bodies behind peak_probes.h, one set per ISA (peak_probes.cpp picks).
#include <cstddef>
#include <cstdint>

namespace sandwich::kernels {

// The FMA and BF16 chains: chain counts and semantics as in peak_probes.h.
constexpr int kFmaChainsAvx512 = 16;  // 2 FMA pipes of latency 4 need 8 in flight
constexpr int kFmaChainsAvx2 = 12;    // as many as 16 ymm registers leave room for
constexpr int kBf16Chains = 24;
float fma_chains_avx512(int64_t iters);
float fma_chains_avx2(int64_t iters);
float bf16_chains_avx512bf16(int64_t iters);

uint64_t stream_read_avx512(const void* p, size_t bytes);
uint64_t stream_read_avx2(const void* p, size_t bytes);
uint64_t stream_read_scalar(const void* p, size_t bytes);  // the reference

}  // namespace sandwich::kernels
