// The row-wise operations: each call goes to the set of bodies of the best ISA cpu_isa() allows.
#include "kernels/elementwise.h"

#include "elementwise_kernels.h"
#include "isa_table.h"

namespace sandwich::kernels {
namespace {

const ElementwiseKernels& active() {
  static const ElementwiseKernels& k =
      pick_isa_table({&kElementwiseAvx512, &kElementwiseAvx2, &kElementwiseScalar});
  return k;
}

}  // namespace

Isa elementwise_isa() {
  return active().isa;
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  active().rmsnorm(x, w, y, n, eps);
}

void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  active().rope(x, n_heads, head_dim, cos, sin);
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  active().softmax(x, n);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  active().silu_mul(gate, up, out, n);
}

void add_inplace(float* y, const float* x, int64_t n) {
  active().add_inplace(y, x, n);
}

void exp_inplace(float* x, int64_t n) {
  active().exp_inplace(x, n);
}

}  // namespace sandwich::kernels
