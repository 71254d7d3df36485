// The plain reference of the quantized kernels: element by element from the packed layout,
// with the float operations of quant_layout.h spelled out (std::fma, no contraction), so the
// vector kernels must give the same bits.
#include <cmath>
#include <cstring>

#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

template <QType T, int R>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  float acc[R][kQRows] = {};
  if (accumulate)
    for (int m = 0; m < R; ++m)
      for (int r = 0; r < kQRows; ++r) acc[m][r] = c[m * kQRows + r];
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    for (int u = 0; u < L.block_elems / 32; ++u) {
      const int64_t k0 = b * L.block_elems + u * 32;
      for (int r = 0; r < kQRows; ++r) {
        for (int m = 0; m < R; ++m) {
          const int8_t* x = a.q + m * a.kk + k0;
          const int32_t* s16 = a.s16 + m * (a.kk / 16) + k0 / 16;
          const int32_t asum = s16[0] + s16[1];
          float s, cm;
          int32_t isum = 0;
          if constexpr (T == QType::Q6_K) {
            // Two 16-k units: int sums times int8 scales, in int32; d alone in f32.
            cm = 0.0f;
            for (int half = 0; half < 2; ++half) {
              int32_t dot = 0;
              for (int e = 0; e < 16; ++e)
                dot += stored_value(L, w, r, 32 * u + 16 * half + e) * x[16 * half + e];
              const int8_t scale =
                  static_cast<int8_t>(w[L.qs_bytes + L.qh_bytes + 32 + 16 * (2 * u + half) + r]);
              isum += scale * (dot - L.offset * s16[half]);
            }
            f16_t d;
            std::memcpy(&d, w + L.qs_bytes + L.qh_bytes + 2 * r, 2);
            s = f16_to_f32(d);
          } else {
            unit_scale(T, w, r, u, &s, &cm);
            int32_t dot = 0;
            for (int e = 0; e < 32; ++e) dot += stored_value(L, w, r, 32 * u + e) * x[e];
            isum = dot - L.offset * asum;
          }
          float t = s * static_cast<float>(isum);
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
