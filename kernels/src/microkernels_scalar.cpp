// Scalar micro-kernels on the packed layouts: the fallback on CPUs without AVX2, and the
// reference the vector kernels are tested against. Activations are F32.
#include <utility>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

template <int UM, DType W>
void tile(const void* a_, const void* b_, int64_t steps, float* c, int64_t ldc, bool accumulate,
          const void*) {
  constexpr int g = k_group(W);
  const auto* a = static_cast<const float*>(a_);
  for (int m = 0; m < UM; ++m)
    for (int n = 0; n < kPanel; ++n) {
      float s = accumulate ? c[m * ldc + n] : 0.0f;
      for (int64_t j = 0; j < steps; ++j)
        for (int e = 0; e < g; ++e) {
          float w;
          if constexpr (W == DType::BF16)
            w = bf16_to_f32(static_cast<const uint16_t*>(b_)[j * g * kPanel + g * n + e]);
          else
            w = static_cast<const float*>(b_)[j * kPanel + n];
          s += a[(j * UM + m) * g + e] * w;
        }
      c[m * ldc + n] = s;
    }
}

template <DType W, int... I>
void add(std::vector<MicroKernel>& t, std::integer_sequence<int, I...>) {
  // Prefetching would not speed up a scalar loop: every variant is the plain one.
  (t.push_back({Isa::Scalar,
                W,
                I + 1,
                kPanel,
                0,
                1,
                {&tile<I + 1, W>, &tile<I + 1, W>, &tile<I + 1, W>, &tile<I + 1, W>},
                {&tile<I + 1, W>, &tile<I + 1, W>, &tile<I + 1, W>, &tile<I + 1, W>}}),
   ...);
}

}  // namespace

// Scalar tiles keep one sum at a time, so their height only sets how often B is re-read.
void add_scalar_microkernels(std::vector<MicroKernel>& t) {
  add<DType::BF16>(t, std::make_integer_sequence<int, 4>{});
  add<DType::F32>(t, std::make_integer_sequence<int, 4>{});
}

}  // namespace sandwich::kernels
