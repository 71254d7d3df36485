#pragma once
// The bodies behind peak_probes.h, one table per ISA (peak_probes.cpp picks per probe).
#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/peak_probes.h"

namespace sandwich::kernels {

struct PeakProbeKernels {
  Isa isa;
  PeakLoop fma_f32;   // run is nullptr where this ISA has no such loop
  PeakLoop bf16_dot;  // likewise
  uint64_t (*stream_read)(const void* p, size_t bytes);  // nullptr likewise
};

extern const PeakProbeKernels kPeakProbesAvx512Bf16;
extern const PeakProbeKernels kPeakProbesAvx512;
extern const PeakProbeKernels kPeakProbesAvx2;
extern const PeakProbeKernels kPeakProbesScalar;  // the stream read's reference; no peak loops

}  // namespace sandwich::kernels
