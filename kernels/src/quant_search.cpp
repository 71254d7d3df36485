#include "quant_search.h"

#include <algorithm>
#include <cmath>

namespace sandwich::kernels {

int nearest_int(float v) {
  // Levels are small; the clamp only keeps a degenerate ratio from overflowing the cast.
  return static_cast<int>(std::nearbyintf(std::clamp(v, -1e9f, 1e9f)));
}

namespace {

int clamp_level(float v, int lo, int hi) {
  return std::clamp(nearest_int(v), lo, hi);
}

}  // namespace

float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    float rmin, float rdelta, int nstep) {
  float lo = x[0], hi = x[0], sum_w = 0, sum_x = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  // The offset is a subtracted min of at least 0 (dmin * m >= 0), so a positive block starts at 0.
  lo = std::min(lo, 0.0f);
  if (hi == lo) {
    std::fill(L, L + n, 0);
    *neg_min = -lo;
    return 0;
  }
  auto error = [&](const uint8_t* levels, float s, float m) {
    float e = 0;
    for (int i = 0; i < n; ++i) {
      const float d = s * levels[i] + m - x[i];
      e += w[i] * (d * d);
    }
    return e;
  };
  float inv = nmax / (hi - lo);
  float scale = 1 / inv, min = lo;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(clamp_level(inv * (x[i] - lo), 0, nmax));
  float best = error(L, scale, min);
  uint8_t trial[256];
  for (int step = 0; step <= nstep; ++step) {
    // Each grid starts from the best offset so far, as ggml's reference search does.
    inv = (rmin + rdelta * step + nmax) / (hi - min);
    float sl = 0, sl2 = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(inv * (x[i] - min), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      sl += w[i] * l;
      sl2 += w[i] * l * l;
      sxl += w[i] * l * x[i];
    }
    // Weighted least squares of x ~ s l + m.
    const float det = sum_w * sl2 - sl * sl;
    if (det <= 0) continue;
    float s = (sum_w * sxl - sum_x * sl) / det;
    float m = (sl2 * sum_x - sl * sxl) / det;
    if (m > 0) {
      m = 0;
      s = sxl / sl2;
    }
    const float e = error(trial, s, m);
    if (e < best) {
      best = e;
      scale = s;
      min = m;
      std::copy(trial, trial + n, L);
    }
  }
  *neg_min = -min;
  return scale;
}

float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  float amax = 0, peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      peak = x[i];
    }
  if (amax < 1e-15f) {
    std::fill(L, L + n, 0);  // any level: the scale is 0
    return 0;
  }
  // The peak maps to -nmax, the end of the range with one more level.
  auto fit = [&](float inv, float* sxl, float* sl2) {
    *sxl = *sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(inv * x[i], -nmax, nmax - 1);
      const float w = x[i] * x[i];
      *sxl += w * x[i] * l;
      *sl2 += w * l * l;
    }
  };
  auto store = [&](float inv) {
    for (int i = 0; i < n; ++i)
      L[i] = static_cast<int8_t>(nmax + clamp_level(inv * x[i], -nmax, nmax - 1));
  };
  float sxl, sl2;
  float inv = -nmax / peak;
  fit(inv, &sxl, &sl2);
  store(inv);
  float scale = sl2 > 0 ? sxl / sl2 : 0;
  float best = scale * sxl;  // the error reduction this scale achieves
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    inv = -(nmax + 0.1f * step) / peak;
    fit(inv, &sxl, &sl2);
    if (sl2 > 0 && sxl * sxl > best * sl2) {
      store(inv);
      scale = sxl / sl2;
      best = scale * sxl;
    }
  }
  return scale;
}

}  // namespace sandwich::kernels
