#pragma once
// Reproducible random inputs for the kernel tests.
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dtype.h"

namespace sandwich::test {

// n values drawn from N(0, stddev^2), the same ones for the same seed. With bf16_exact they are
// rounded to BF16, so that a kernel which rounds its inputs to BF16 changes nothing.
inline std::vector<float> random_normal(size_t n, uint32_t seed, float stddev = 1.0f,
                                        bool bf16_exact = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_exact ? kernels::bf16_to_f32(kernels::f32_to_bf16(nd(rng))) : nd(rng);
  return v;
}

}  // namespace sandwich::test
