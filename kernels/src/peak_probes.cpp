// Which body of each peak probe runs on this CPU.
#include "kernels/peak_probes.h"

#include <stdexcept>
#include <string>

#include "peak_probe_bodies.h"

namespace sandwich::kernels {

PeakLoop fma_f32_peak_loop() {
  if (cpu_has(Isa::Avx512))
    return {Isa::Avx512, kFmaChainsAvx512, kFmaChainsAvx512 * 16 * 2.0, fma_chains_avx512};
  if (cpu_has(Isa::Avx2))
    return {Isa::Avx2, kFmaChainsAvx2, kFmaChainsAvx2 * 8 * 2.0, fma_chains_avx2};
  return {};
}

PeakLoop bf16_dot_peak_loop() {
  // A vdpbf16ps lane: two products and two adds.
  if (cpu_has(Isa::Avx512Bf16))
    return {Isa::Avx512Bf16, kBf16Chains, kBf16Chains * 16 * 4.0, bf16_chains_avx512bf16};
  return {};
}

uint64_t stream_read(const void* p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % 64 || bytes % 256)
    throw std::invalid_argument(
        "stream_read: needs a 64-byte aligned start and a multiple of "
        "256 bytes, not " +
        std::to_string(bytes));
  if (cpu_has(Isa::Avx512)) return stream_read_avx512(p, bytes);
  if (cpu_has(Isa::Avx2)) return stream_read_avx2(p, bytes);
  return stream_read_scalar(p, bytes);
}

}  // namespace sandwich::kernels
