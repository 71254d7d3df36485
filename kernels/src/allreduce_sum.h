#pragma once
// The sums behind the all-reduce, one table per ISA (allreduce.cpp picks per type): out[i] =
// src[0][i] + src[1][i] + ... + src[ranks-1][i] in that order for i in [0, n), in FP32, so every
// rank and every body gets bitwise the same result; BF16 rounds to nearest even like
// f32_to_bf16. out may be one of the sources. ranks <= 64.
#include <cstddef>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

struct AllReduceSums {
  Isa isa;
  // nullptr where this ISA adds nothing for the type (AVX512_BF16 only rounds BF16).
  void (*f32)(const float* const* src, int ranks, size_t n, float* out);
  void (*bf16)(const bf16_t* const* src, int ranks, size_t n, bf16_t* out);
};

extern const AllReduceSums kAllReduceAvx512Bf16;
extern const AllReduceSums kAllReduceAvx512;
extern const AllReduceSums kAllReduceAvx2;
extern const AllReduceSums kAllReduceScalar;

// The references, and the vector bodies' tails.
void sum_slots_scalar(const float* const* src, int ranks, size_t n, float* out);
void sum_slots_scalar(const bf16_t* const* src, int ranks, size_t n, bf16_t* out);

// Elements [i, n) past a vector body's last whole vector, by the reference.
template <class T>
void sum_tail(const T* const* src, int ranks, size_t i, size_t n, T* out) {
  if (i == n) return;
  const T* rest[64];
  for (int q = 0; q < ranks; ++q) rest[q] = src[q] + i;
  sum_slots_scalar(rest, ranks, n - i, out + i);
}

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
