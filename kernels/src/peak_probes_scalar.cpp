// The scalar stream read: the fallback below AVX2 and the reference of the vector bodies. (The
// peak loops have no scalar body: below AVX2 there is no FMA peak to measure.)
#include "peak_loops.h"
#include "peak_probe_bodies.h"

namespace sandwich::kernels {
namespace {

using Word = uint64_t __attribute__((may_alias));

uint64_t stream_read_scalar(const void* p, size_t bytes) {
  return peak::xor_words<Word>(p, bytes);
}

}  // namespace

const PeakProbeKernels kPeakProbesScalar = {Isa::Scalar, {}, {}, stream_read_scalar};

}  // namespace sandwich::kernels
