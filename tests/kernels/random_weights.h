#pragma once
// A random packed weight for the GEMM tests, with the unpacked values beside it.
#include <cstdint>
#include <vector>

#include "kernels/gemm.h"
#include "random_values.h"

namespace sandwich::test {

struct RandomWeights {
  std::vector<float> w;  // n x k, values exactly representable in the storage type
  std::vector<uint8_t> buf;
  kernels::PackedWeight pw;
};

inline RandomWeights random_weights(int64_t n, int64_t k, kernels::DType dt, uint32_t seed) {
  RandomWeights r;
  r.w = random_normal(static_cast<size_t>(n * k), seed, 1.0f, dt == kernels::DType::BF16);
  r.pw = kernels::plan_packed_weight(n, k, dt);
  r.buf.assign(r.pw.bytes + 64, 0);
  r.pw.data = r.buf.data() + (64 - reinterpret_cast<uintptr_t>(r.buf.data()) % 64) % 64;
  kernels::pack_weight(r.pw, r.w.data(), kernels::DType::F32, k);
  return r;
}

}  // namespace sandwich::test
