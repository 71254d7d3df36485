#include "kernels/quant_validate.h"

#include <cmath>
#include <cstring>

namespace sandwich::kernels {
namespace {

// An f16 is NaN or infinite when all its exponent bits are set.
bool f16_nonfinite(f16_t h) {
  return (h & 0x7c00u) == 0x7c00u;
}

template <class Block, class Check>
int64_t scan(const void* blocks, int64_t n, Check bad) {
  const auto* b = static_cast<const Block*>(blocks);
  for (int64_t i = 0; i < n; ++i)
    if (bad(b[i])) return i;
  return -1;
}

}  // namespace

int64_t find_nonfinite_scale(QType t, const void* blocks, int64_t n) {
  auto d_only = [](const auto& b) { return f16_nonfinite(b.d); };
  auto d_and_m = [](const auto& b) { return f16_nonfinite(b.d) || f16_nonfinite(b.m); };
  auto d_and_dmin = [](const auto& b) { return f16_nonfinite(b.d) || f16_nonfinite(b.dmin); };
  switch (t) {
    case QType::Q4_0:
      return scan<BlockQ4_0>(blocks, n, d_only);
    case QType::Q4_1:
      return scan<BlockQ4_1>(blocks, n, d_and_m);
    case QType::Q5_0:
      return scan<BlockQ5_0>(blocks, n, d_only);
    case QType::Q5_1:
      return scan<BlockQ5_1>(blocks, n, d_and_m);
    case QType::Q8_0:
      return scan<BlockQ8_0>(blocks, n, d_only);
    case QType::Q4_K:
      return scan<BlockQ4_K>(blocks, n, d_and_dmin);
    case QType::Q5_K:
      return scan<BlockQ5_K>(blocks, n, d_and_dmin);
    case QType::Q6_K:
      return scan<BlockQ6_K>(blocks, n, d_only);
    case QType::Q8_K:
      return scan<BlockQ8_K>(blocks, n, [](const BlockQ8_K& b) { return !std::isfinite(b.d); });
  }
  return -1;
}

}  // namespace sandwich::kernels
