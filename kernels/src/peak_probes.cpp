// Which body of each peak probe runs on this CPU: the widest table that has one.
#include "kernels/peak_probes.h"

#include <stdexcept>
#include <string>

#include "isa_table.h"
#include "peak_probe_bodies.h"

namespace sandwich::kernels {
namespace {

template <class Has>
const PeakProbeKernels& widest(Has has) {
  return pick_isa_table(
      {&kPeakProbesAvx512Bf16, &kPeakProbesAvx512, &kPeakProbesAvx2, &kPeakProbesScalar}, has);
}

}  // namespace

PeakLoop fma_f32_peak_loop() {
  static const PeakLoop loop =
      widest([](const PeakProbeKernels& k) { return k.fma_f32.run != nullptr; }).fma_f32;
  return loop;
}

PeakLoop bf16_dot_peak_loop() {
  static const PeakLoop loop =
      widest([](const PeakProbeKernels& k) { return k.bf16_dot.run != nullptr; }).bf16_dot;
  return loop;
}

uint64_t stream_read(const void* p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % 64 || bytes % 256)
    throw std::invalid_argument(
        "stream_read: needs a 64-byte aligned start and a multiple of "
        "256 bytes, not " +
        std::to_string(bytes));
  static const auto read =
      widest([](const PeakProbeKernels& k) { return k.stream_read != nullptr; }).stream_read;
  return read(p, bytes);
}

}  // namespace sandwich::kernels
