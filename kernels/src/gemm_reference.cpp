// The plain GEMM every optimised path is tested against.
#include "kernels/gemm.h"

namespace sandwich::kernels {

void gemm_ref(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t m, int64_t n,
              int64_t k, float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += static_cast<double>(x[i * ldx + t]) * w[j * ldw + t];
      y[i * ldy + j] = static_cast<float>(s);
    }
}

}  // namespace sandwich::kernels
