// Scalar sums of the all-reduce: the fallback, the reference the vector bodies are tested
// against, and the vector bodies' tails.
#include "allreduce_sum.h"

namespace sandwich::kernels {
namespace {

template <class T>
void sum_scalar(const T* const* src, int R, size_t n, T* out) {
  for (size_t i = 0; i < n; ++i) {
    float s = to_f32(src[0][i]);
    for (int q = 1; q < R; ++q) s += to_f32(src[q][i]);
    from_f32(out[i], s);
  }
}

}  // namespace

void sum_slots_scalar(const float* const* src, int ranks, size_t n, float* out) {
  sum_scalar(src, ranks, n, out);
}
void sum_slots_scalar(const bf16_t* const* src, int ranks, size_t n, bf16_t* out) {
  sum_scalar(src, ranks, n, out);
}

const AllReduceSums kAllReduceScalar = {Isa::Scalar, sum_slots_scalar, sum_slots_scalar};

}  // namespace sandwich::kernels
