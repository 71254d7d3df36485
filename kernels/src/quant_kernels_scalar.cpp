// The plain reference of the quantized kernels: element by element from the packed layout,
// with the float operations of quant_layout.h spelled out (std::fma, no contraction), so the
// vector kernels must give the same bits.
#include <cmath>

#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

template <QType T, int R>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c) {
  constexpr QLayout L = qlayout(T);
  float acc[R][kQRows] = {};
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    for (int u = 0; u < L.block_elems / L.unit; ++u) {
      const int64_t k0 = b * L.block_elems + u * L.unit;
      for (int r = 0; r < kQRows; ++r) {
        float s, cm;
        unit_scale(T, w, r, u, &s, &cm);
        for (int m = 0; m < R; ++m) {
          const int8_t* x = a.q + m * a.kk + k0;
          int32_t dot = 0;
          for (int e = 0; e < L.unit; ++e) dot += stored_value(L, w, r, u * L.unit + e) * x[e];
          const int32_t* s16 = a.s16 + m * (a.kk / 16) + k0 / 16;
          const int32_t asum = L.unit == 32 ? s16[0] + s16[1] : s16[0];
          float t = s * static_cast<float>(dot - L.offset * asum);
          if (L.has_min) t = std::fma(cm, static_cast<float>(asum), t);
          acc[m][r] = std::fma(t, a.d[m * (a.kk / 32) + k0 / 32], acc[m][r]);
        }
      }
    }
  }
  for (int m = 0; m < R; ++m)
    for (int r = 0; r < kQRows; ++r) c[m * kQRows + r] = acc[m][r];
}

constexpr int kMaxRows = 4;

template <QType T, int... R>
QKernelFn pick(int rows, std::integer_sequence<int, R...>) {
  QKernelFn fns[] = {kernel<T, R + 1>...};
  return rows >= 1 && rows <= kMaxRows ? fns[rows - 1] : nullptr;
}

}  // namespace

QKernelFn quant_kernel_scalar(QType t, int rows) {
  const auto seq = std::make_integer_sequence<int, kMaxRows>{};
  switch (t) {
    case QType::Q4_0:
      return pick<QType::Q4_0>(rows, seq);
    case QType::Q4_1:
      return pick<QType::Q4_1>(rows, seq);
    case QType::Q5_0:
      return pick<QType::Q5_0>(rows, seq);
    case QType::Q5_1:
      return pick<QType::Q5_1>(rows, seq);
    case QType::Q8_0:
      return pick<QType::Q8_0>(rows, seq);
    case QType::Q4_K:
      return pick<QType::Q4_K>(rows, seq);
    case QType::Q5_K:
      return pick<QType::Q5_K>(rows, seq);
    case QType::Q6_K:
      return pick<QType::Q6_K>(rows, seq);
    case QType::Q8_K:
      return pick<QType::Q8_K>(rows, seq);
  }
  return nullptr;
}

}  // namespace sandwich::kernels
