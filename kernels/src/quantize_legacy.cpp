// The 32-weight types: one f16 scale (and min) per block, weights rounded to the nearest level.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantize_impl.h"

namespace sandwich::kernels {
namespace {

// The weight of largest magnitude, with its sign: mapping it to the most negative level uses
// the one extra level of a two's-complement-like range (-8..7, -16..15).
float signed_peak(const float* x, int n) {
  float amax = 0, peak = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      peak = x[j];
    }
  return peak;
}

void min_max(const float* x, int n, float* lo, float* hi) {
  *lo = x[0];
  *hi = x[0];
  for (int j = 1; j < n; ++j) {
    *lo = std::min(*lo, x[j]);
    *hi = std::max(*hi, x[j]);
  }
}

// Level of v * inv + offset, rounded half up (offset carries the +0.5), within 0..top.
uint8_t level(float v, float inv, float offset, int top) {
  return static_cast<uint8_t>(std::clamp(static_cast<int>(v * inv + offset), 0, top));
}

void put_fifth_bits(uint8_t* qh, const uint8_t* l) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>(l[j] >> 4) << j;
  std::memcpy(qh, &bits, 4);
}

void pack_nibbles(uint8_t* qs, const uint8_t* l) {
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((l[j] & 0xF) | ((l[j + kQK / 2] & 0xF) << 4));
}

}  // namespace

void quantize_legacy(QType t, const float* x, void* dst, int64_t nb) {
  uint8_t l[kQK];
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    switch (t) {
      case QType::Q4_0:
      case QType::Q5_0: {
        const int half = t == QType::Q4_0 ? 8 : 16;
        const float d = signed_peak(x, kQK) / -half;
        const float inv = d != 0 ? 1 / d : 0;
        for (int j = 0; j < kQK; ++j) l[j] = level(x[j], inv, half + 0.5f, 2 * half - 1);
        if (t == QType::Q4_0) {
          auto& b = static_cast<BlockQ4_0*>(dst)[i];
          b.d = f32_to_f16(d);
          pack_nibbles(b.qs, l);
        } else {
          auto& b = static_cast<BlockQ5_0*>(dst)[i];
          b.d = f32_to_f16(d);
          pack_nibbles(b.qs, l);
          put_fifth_bits(b.qh, l);
        }
        break;
      }
      case QType::Q4_1:
      case QType::Q5_1: {
        const int top = t == QType::Q4_1 ? 15 : 31;
        float lo, hi;
        min_max(x, kQK, &lo, &hi);
        const float d = (hi - lo) / top;
        const float inv = d != 0 ? 1 / d : 0;
        for (int j = 0; j < kQK; ++j) l[j] = level(x[j] - lo, inv, 0.5f, top);
        if (t == QType::Q4_1) {
          auto& b = static_cast<BlockQ4_1*>(dst)[i];
          b.d = f32_to_f16(d);
          b.m = f32_to_f16(lo);
          pack_nibbles(b.qs, l);
        } else {
          auto& b = static_cast<BlockQ5_1*>(dst)[i];
          b.d = f32_to_f16(d);
          b.m = f32_to_f16(lo);
          pack_nibbles(b.qs, l);
          put_fifth_bits(b.qh, l);
        }
        break;
      }
      case QType::Q8_0: {
        auto& b = static_cast<BlockQ8_0*>(dst)[i];
        float amax = 0;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float inv = d != 0 ? 1 / d : 0;
        b.d = f32_to_f16(d);
        for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * inv));
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace sandwich::kernels
