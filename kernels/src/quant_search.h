#pragma once
// Scale searches of the K-type quantizers: fit a sub-block of weights to integer levels.
#include <cstdint>

namespace sandwich::kernels {

// Round half to even, as ggml's quantizers round.
int nearest_int(float v);

// Asymmetric levels 0..nmax: finds scale s > 0 and offset m <= 0 such that x ~ s * L + m,
// minimising sum w (s L + m - x)^2 over nstep trial grids around nmax levels, each refined
// by a weighted least-squares solve. Writes L (n values) and returns s; *neg_min = -m.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    float rmin, float rdelta, int nstep);

// Symmetric levels -nmax..nmax-1 (stored as L + nmax in 0..2 nmax - 1): finds s with
// x ~ s * (L - nmax), weighting each weight by x^2, over trial grids around nmax. Returns s
// (0 for an all-zero sub-block).
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L);

}  // namespace sandwich::kernels
