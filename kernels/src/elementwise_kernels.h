#pragma once
// One ISA's bodies of the row-wise operations of elementwise.h, which picks one set at run time.
// Each elementwise_<isa>.cpp defines its set; the scalar one is the reference.
#include <cstdint>

#include "kernels/cpu_features.h"

namespace sandwich::kernels {

struct ElementwiseKernels {
  Isa isa;
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n, float eps);
  void (*rope)(float* x, int n_heads, int head_dim, const float* cos, const float* sin);
  void (*softmax)(float* x, int64_t n);  // n >= 1
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  void (*exp_inplace)(float* x, int64_t n);
};

extern const ElementwiseKernels kElementwiseAvx512;
extern const ElementwiseKernels kElementwiseAvx2;
extern const ElementwiseKernels kElementwiseScalar;

}  // namespace sandwich::kernels
