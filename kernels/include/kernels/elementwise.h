#pragma once
// Row-wise operations of a Llama layer. Each has a plain scalar reference (*_ref) that the tests
// compare the vectorised version against; the fast one picks its ISA at run time.
#include <cstdint>

#include "kernels/cpu_features.h"

namespace sandwich::kernels {

// The ISA the operations below run with: the widest of AVX-512, AVX2 and scalar (the *_ref
// bodies) that cpu_has() allows.
Isa elementwise_isa();

// y = x / sqrt(mean(x^2) + eps) * w. y may alias x.
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);
void rmsnorm_ref(const float* x, const float* w, float* y, int64_t n, float eps);

// Rotary embedding in the rotate-half layout on n_heads heads of head_dim values, in place:
// (x[i], x[i + head_dim/2]) is rotated by the angle whose cos/sin are cos[i]/sin[i].
void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin);
void rope_ref(float* x, int n_heads, int head_dim, const float* cos, const float* sin);

// In-place softmax over n values.
void softmax(float* x, int64_t n);
void softmax_ref(float* x, int64_t n);

// out = silu(gate) * up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n);

// y += x.
void add_inplace(float* y, const float* x, int64_t n);

// e^x for n values, vectorised (max relative error ~2e-7); exposed for tests.
void exp_inplace(float* x, int64_t n);

}  // namespace sandwich::kernels
