// The 256-weight K types: per-sub-block scales (and mins) found by a least-squares search, then
// themselves quantized to 6 or 8 bits against one f16 super-block scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant_search.h"
#include "quantize_impl.h"

namespace sandwich::kernels {
namespace {

constexpr int kSub = 32;  // sub-block of Q4_K/Q5_K

// Inverse of k_scale_min: 6-bit scale and min of sub-block j into the 12 packed bytes.
void put_scale_min(int j, uint8_t sc, uint8_t m, uint8_t* q) {
  if (j < 4) {
    q[j] = sc;
    q[j + 4] = m;
  } else {
    q[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    q[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
    q[j] |= static_cast<uint8_t>((m >> 4) << 6);
  }
}

// Q4_K/Q5_K: levels 0..nmax per weight, after the 8 sub-block scales and mins are rounded to
// 6 bits. Returns d and dmin in f16 through the block's fields.
void quantize_scale_min_block(const float* x, int nmax, float rmin, int nstep, f16_t* d_out,
                              f16_t* dmin_out, uint8_t* scales, uint8_t* L) {
  float sc[8], mn[8], w[kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    // Larger weights matter more, but no weight counts for nothing.
    const float av = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) w[l] = av + std::fabs(xs[l]);
    sc[j] = fit_scale_min(kSub, nmax, xs, w, L + kSub * j, &mn[j], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, sc[j]);
    max_min = std::max(max_min, mn[j]);
  }
  const float inv_scale = max_scale > 0 ? 63 / max_scale : 0;
  const float inv_min = max_min > 0 ? 63 / max_min : 0;
  std::memset(scales, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const int ls = std::min(63, nearest_int(inv_scale * sc[j]));
    const int lm = std::min(63, nearest_int(inv_min * mn[j]));
    put_scale_min(j, static_cast<uint8_t>(ls), static_cast<uint8_t>(lm), scales);
  }
  *d_out = f32_to_f16(max_scale / 63);
  *dmin_out = f32_to_f16(max_min / 63);
  // Levels again against the scales as stored, so rounding them costs as little as possible.
  const float d = f16_to_f32(*d_out), dmin = f16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t s, m;
    k_scale_min(j, scales, &s, &m);
    const float ds = d * s;
    if (ds == 0) continue;
    const float dm = dmin * m;
    for (int l = 0; l < kSub; ++l) {
      const int q = nearest_int((x[kSub * j + l] + dm) / ds);
      L[kSub * j + l] = static_cast<uint8_t>(std::clamp(q, 0, nmax));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K& b) {
  uint8_t L[kQKK];
  quantize_scale_min_block(x, 15, -1.0f, 20, &b.d, &b.dmin, b.scales, L);
  for (int j = 0; j < kQKK; j += 64)
    for (int l = 0; l < 32; ++l)
      b.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
}

void quantize_q5_k(const float* x, BlockQ5_K& b) {
  uint8_t L[kQKK];
  quantize_scale_min_block(x, 31, -0.5f, 15, &b.d, &b.dmin, b.scales, L);
  std::memset(b.qh, 0, sizeof b.qh);
  uint8_t lo_bit = 1, hi_bit = 2;
  for (int j = 0; j < kQKK; j += 64, lo_bit <<= 2, hi_bit <<= 2)
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = L[j + l], c = L[j + l + 32];
      if (a > 15) b.qh[l] |= lo_bit;
      if (c > 15) b.qh[l] |= hi_bit;
      b.qs[j / 2 + l] = static_cast<uint8_t>((a & 0xF) | ((c & 0xF) << 4));
    }
}

void quantize_q6_k(const float* x, BlockQ6_K& b) {
  constexpr int kSub6 = 16;
  int8_t L[kQKK];
  float sc[kQKK / kSub6];
  float max_abs = 0, max_scale = 0;
  for (int j = 0; j < kQKK / kSub6; ++j) {
    sc[j] = fit_symmetric_scale(kSub6, 32, x + kSub6 * j, L + kSub6 * j);
    if (std::fabs(sc[j]) > max_abs) {
      max_abs = std::fabs(sc[j]);
      max_scale = sc[j];
    }
  }
  if (max_abs < 1e-15f) {
    std::memset(&b, 0, sizeof b);  // d = 0: every level is weight 0
    return;
  } else {
    const float inv = -128 / max_scale;
    b.d = f32_to_f16(1 / inv);
    for (int j = 0; j < kQKK / kSub6; ++j)
      b.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(inv * sc[j])));
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQKK / kSub6; ++j) {
      const float ds = d * b.scales[j];
      if (ds == 0) continue;
      for (int l = 0; l < kSub6; ++l) {
        const int q = nearest_int(x[kSub6 * j + l] / ds);
        L[kSub6 * j + l] = static_cast<int8_t>(std::clamp(q, -32, 31) + 32);
      }
    }
  }
  uint8_t* ql = b.ql;
  uint8_t* qh = b.qh;
  for (int j = 0; j < kQKK; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
}

void quantize_q8_k(const float* x, BlockQ8_K& b) {
  float amax = 0, peak = 0;
  for (int j = 0; j < kQKK; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      peak = x[j];
    }
  std::memset(&b, 0, sizeof b);
  if (amax == 0) return;
  // -127, not -128: the activation kernels rely on |q| <= 127.
  const float inv = -127 / peak;
  for (int j = 0; j < kQKK; ++j)
    b.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(inv * x[j])));
  for (int g = 0; g < kQKK / 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
    b.bsums[g] = static_cast<int16_t>(sum);
  }
  b.d = 1 / inv;
}

}  // namespace

void quantize_k(QType t, const float* x, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    switch (t) {
      case QType::Q4_K:
        quantize_q4_k(x, static_cast<BlockQ4_K*>(dst)[i]);
        break;
      case QType::Q5_K:
        quantize_q5_k(x, static_cast<BlockQ5_K*>(dst)[i]);
        break;
      case QType::Q6_K:
        quantize_q6_k(x, static_cast<BlockQ6_K*>(dst)[i]);
        break;
      case QType::Q8_K:
        quantize_q8_k(x, static_cast<BlockQ8_K*>(dst)[i]);
        break;
      default:
        break;
    }
  }
}

}  // namespace sandwich::kernels
