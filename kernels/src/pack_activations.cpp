// Packing activations into micro-kernel panels (layout in microkernel.h): the tile's rows
// interleaved by K step, so a kernel reads A as one contiguous stream and the broadcasts of a
// step share a cache line. BF16 kernels also get the activations rounded here.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

// x[0, k) as BF16 pairs, zero-padded to `pairs` pairs (round to nearest even, as vcvtne2ps2bf16).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void to_bf16_pairs(const float* x,
                                                                                   int64_t k,
                                                                                   int64_t pairs,
                                                                                   uint32_t* out) {
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i / 2, (__m512i)v);
  }
  for (; i < 2 * pairs; i += 2) {
    const uint32_t lo = i < k ? f32_to_bf16(x[i]) : 0, hi = i + 1 < k ? f32_to_bf16(x[i + 1]) : 0;
    out[i / 2] = lo | hi << 16;
  }
}

// Interleaves `rows` rows of `units` units of U bytes each, by unit: out[j][m] = row m, unit j.
// memcpy keeps the loads legal on rows that are only float-aligned.
template <size_t U>
void interleave(const void* const* rows_in, int64_t rows, int64_t units, void* out) {
  auto* o = static_cast<unsigned char*>(out);
  if (rows == 1) {
    std::memcpy(o, rows_in[0], static_cast<size_t>(units) * U);
    return;
  }
  for (int64_t j = 0; j < units; ++j)
    for (int64_t m = 0; m < rows; ++m)
      std::memcpy(o + (j * rows + m) * U, static_cast<const unsigned char*>(rows_in[m]) + j * U, U);
}

}  // namespace

void pack_activations(Isa isa, DType weights, const float* x, int64_t ldx, int64_t rows, int64_t k,
                      int64_t k_steps, void* out) {
  const int g = k_group(weights);
  thread_local std::vector<uint64_t> staging;  // rows padded to whole steps (8-byte units at most)
  thread_local std::vector<const void*> row_ptrs;
  row_ptrs.resize(static_cast<size_t>(rows));
  const bool padded = k != k_steps * g;
  if (activation_type(isa, weights) == DType::BF16) {
    staging.resize(static_cast<size_t>(rows * k_steps + 1) / 2 + 1);
    auto* st = reinterpret_cast<uint32_t*>(staging.data());
    if (rows == 1) {
      to_bf16_pairs(x, k, k_steps, static_cast<uint32_t*>(out));
      return;
    }
    for (int64_t m = 0; m < rows; ++m) {
      to_bf16_pairs(x + m * ldx, k, k_steps, st + m * k_steps);
      row_ptrs[m] = st + m * k_steps;
    }
    interleave<4>(row_ptrs.data(), rows, k_steps, out);
    return;
  }
  // F32: steps of one float (F32 weights) or of a float pair (BF16 weights widened by AVX2 or
  // scalar kernels). Rows that need zero padding are staged first.
  if (padded) {
    staging.assign(static_cast<size_t>(rows * k_steps * g + 1) / 2, 0);
    auto* st = reinterpret_cast<float*>(staging.data());
    for (int64_t m = 0; m < rows; ++m)
      std::memcpy(st + m * k_steps * g, x + m * ldx, static_cast<size_t>(k) * 4);
    x = st;
    ldx = k_steps * g;
  }
  for (int64_t m = 0; m < rows; ++m) row_ptrs[m] = x + m * ldx;
  if (g == 2)
    interleave<8>(row_ptrs.data(), rows, k_steps, out);
  else
    interleave<4>(row_ptrs.data(), rows, k_steps, out);
}

}  // namespace sandwich::kernels
