// Scalar micro-kernels on the packed layout: the fallback on CPUs without AVX2, and the
// reference the vector kernels are tested against. A is F32.
#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

template <int UM, DType W>
void mk(const void* a_, int64_t lda, const void* b_, int64_t k, float* c, int64_t ldc, bool accumulate) {
  const auto* a = static_cast<const float*>(a_);
  for (int m = 0; m < UM; ++m)
    for (int n = 0; n < kPanel; ++n) {
      float s = accumulate ? c[m * ldc + n] : 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        float w;
        if constexpr (W == DType::BF16)
          w = bf16_to_f32(static_cast<const uint16_t*>(b_)[(j / 2) * 2 * kPanel + 2 * n + (j & 1)]);
        else
          w = static_cast<const float*>(b_)[j * kPanel + n];
        s += a[m * lda + j] * w;
      }
      c[m * ldc + n] = s;
    }
}

template <int... I>
void add(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  (t.push_back({Isa::Scalar, DType::BF16, I + 1, kPanel, 0, &mk<I + 1, DType::BF16>}), ...);
  (t.push_back({Isa::Scalar, DType::F32, I + 1, kPanel, 0, &mk<I + 1, DType::F32>}), ...);
}

}  // namespace

void add_scalar_microkernels(std::vector<MicroKernel>& t) { add(t, std::make_integer_sequence<int, 4>{}); }

}  // namespace sandwich::kernels
