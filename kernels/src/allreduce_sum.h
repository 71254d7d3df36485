#pragma once
// The sums behind the all-reduce, one body per ISA (allreduce.cpp picks): out[i] = src[0][i] +
// src[1][i] + ... + src[ranks-1][i] in that order for i in [0, n), in FP32, so every rank and
// every body gets bitwise the same result; BF16 rounds to nearest even like f32_to_bf16. out may
// be one of the sources.
#include <cstddef>

#include "kernels/dtype.h"

namespace sandwich::kernels {

void sum_slots_avx512(const float* const* src, int ranks, size_t n, float* out);
void sum_slots_avx512bf16(const bf16_t* const* src, int ranks, size_t n, bf16_t* out);
// The references, and the bodies' tails.
void sum_slots_scalar(const float* const* src, int ranks, size_t n, float* out);
void sum_slots_scalar(const bf16_t* const* src, int ranks, size_t n, bf16_t* out);

// The scalar element conversions of the sums.
inline float to_f32(float v) {
  return v;
}
inline float to_f32(bf16_t v) {
  return bf16_to_f32(v);
}
inline void from_f32(float& d, float v) {
  d = v;
}
inline void from_f32(bf16_t& d, float v) {
  d = f32_to_bf16(v);
}

}  // namespace sandwich::kernels
