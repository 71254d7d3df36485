#pragma once
// Loops that hold one core at a limit of the machine, for the tuner's calibration and
// bench_kernels' rooflines (one implementation for both): chains of FP32 FMAs or BF16 dot
// products on registers only, and a streaming read. Each runs the widest body cpu_has() allows.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace sandwich::kernels {

// `iters` rounds of one instruction on each of `chains` independent accumulator registers:
// enough chains to keep every pipe busy through the instruction's latency.
struct PeakLoop {
  Isa isa = Isa::Scalar;
  int chains = 0;
  double flops_per_iter = 0;  // FLOPs of one round, all chains and lanes
  // Lane 0 of the sum of the chains (chain 0 first), so no chain can be dropped; nullptr where
  // this CPU lacks the instruction.
  float (*run)(int64_t iters) = nullptr;
};

// vfmadd on AVX-512, else AVX2 (none below). Chain c starts at c * 1e-3f; a round makes each
// value x into fma(x, 0.999999f, 1e-7f).
PeakLoop fma_f32_peak_loop();
// vdpbf16ps, where the CPU has AVX512_BF16. Chains start at 0; a round adds the dot product of
// the BF16 pairs (1, 1) . (1, 1), so run(iters) is 2 * chains * iters while that is exact.
PeakLoop bf16_dot_peak_loop();

// Reads [p, p + bytes) once, front to back, 256 bytes a step in four independent streams of
// loads (hardware prefetch only: software prefetch measured slower), and returns the XOR of its
// 64-bit words so the loads cannot be dropped. p: 64-byte aligned; bytes: a multiple of 256.
uint64_t stream_read(const void* p, size_t bytes);

}  // namespace sandwich::kernels
