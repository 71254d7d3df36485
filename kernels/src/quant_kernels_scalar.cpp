// The plain reference of the quantized kernels: element by element from the packed layout,
// with the float operations of quant_layout.h spelled out (std::fma, no contraction), so the
// vector kernels must give the same bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

// Unit u's integer sum of row r against activation row x (quant_layout.h's isum).
template <QType T>
int32_t unit_isum(const uint8_t* w, int r, int u, const int8_t* x, const int32_t* s16) {
  constexpr QLayout L = qlayout(T);
  const uint8_t* meta = w;
  if constexpr (T == QType::Q6_K) {
    int32_t isum = 0;
    for (int half = 0; half < 2; ++half) {
      int32_t dot = 0;
      for (int e = 0; e < 16; ++e)
        dot += stored_value(L, w, r, 32 * u + 16 * half + e) * x[16 * half + e];
      const int8_t scale = static_cast<int8_t>(meta[32 + 16 * (2 * u + half) + r]);
      isum += scale * (dot - L.offset * s16[half]);
    }
    return isum;
  }
  int32_t dot = 0;
  for (int e = 0; e < 32; ++e) dot += stored_value(L, w, r, 32 * u + e) * x[e];
  if constexpr (T == QType::Q4_K || T == QType::Q5_K) return meta[64 + 16 * u + r] * dot;
  return dot - L.offset * (s16[0] + s16[1]);
}

template <QType T, int R>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  constexpr int kUnits = L.block_elems / 32;
  const int64_t k32 = a.kk / 32, k16 = a.kk / 16;
  float acc[R][kQRows] = {};
  if (accumulate)
    for (int m = 0; m < R; ++m)
      for (int r = 0; r < kQRows; ++r) acc[m][r] = c[m * kQRows + r];
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    const uint8_t* meta = w;
    for (int r = 0; r < kQRows; ++r) {
      float d, dm = 0.0f;
      if constexpr (T == QType::Q8_K) {
        std::memcpy(&d, meta + 4 * r, 4);
      } else {
        f16_t h;
        std::memcpy(&h, meta + 2 * r, 2);
        d = f16_to_f32(h);
        std::memcpy(&h, meta + 32 + 2 * r, 2);
        if (L.has_min) dm = f16_to_f32(h);
      }
      for (int m = 0; m < R; ++m) {
        const int8_t* x = a.q + m * a.kk + b * L.block_elems;
        const int32_t* s16 = a.s16 + m * k16 + b * L.block_elems / 16;
        const float* da = a.d + m * k32 + b * kUnits;
        const float* ds = a.ds + m * k32 + b * kUnits;
        float& y = acc[m][r];
        if constexpr (L.block_elems == kQKK) {
          float blk = 0.0f;
          for (int u = 0; u < kUnits; ++u)
            blk = std::fma(static_cast<float>(unit_isum<T>(w, r, u, x + 32 * u, s16 + 2 * u)),
                           da[u], blk);
          y = std::fma(d, blk, y);
          if constexpr (T == QType::Q4_K || T == QType::Q5_K) {
            // The mins' sum in two chains (even and odd units), as the vector kernels keep it.
            auto mn = [&](int u) { return static_cast<float>(meta[192 + 16 * u + r]); };
            float t[2] = {mn(0) * ds[0], mn(1) * ds[1]};
            for (int u = 2; u < kUnits; ++u) t[u % 2] = std::fma(mn(u), ds[u], t[u % 2]);
            y = std::fma(-dm, t[0] + t[1], y);
          }
        } else {
          y = std::fma(d * da[0], static_cast<float>(unit_isum<T>(w, r, 0, x, s16)), y);
          if constexpr (L.has_min) y = std::fma(dm, ds[0], y);
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

void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16, float* ds) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * ldx;
    for (int64_t b = 0; b < kk / 32; ++b) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xr[32 * b + j]));
      const float scale = amax / 127.0f;
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      int8_t* qb = q + m * kk + 32 * b;
      for (int j = 0; j < 32; ++j) {
        float v = std::nearbyint(xr[32 * b + j] * inv);
        if (std::isnan(v)) v = 0.0f;  // (an Inf or NaN activation: an Inf or NaN scale)
        qb[j] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
      int32_t sums[2] = {0, 0};
      for (int j = 0; j < 32; ++j) sums[j / 16] += qb[j];
      d[m * (kk / 32) + b] = scale;
      s16[m * (kk / 16) + 2 * b] = sums[0];
      s16[m * (kk / 16) + 2 * b + 1] = sums[1];
      ds[m * (kk / 32) + b] = scale * static_cast<float>(sums[0] + sums[1]);
    }
  }
}

// No prefetching variants: the scalar kernels are the reference, not a decode path.
QKernelFn quant_kernel(QType t, int rows, bool /*prefetch*/) {
  return dispatch_qtype(
      t, [&]<QType T>() { return pick<T>(rows, std::make_integer_sequence<int, kMaxRows>{}); });
}

}  // namespace

const QuantKernels kQuantScalar = {Isa::Scalar, kMaxRows, quant_kernel, quantize_activations};

}  // namespace sandwich::kernels
