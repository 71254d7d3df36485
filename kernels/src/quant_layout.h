#pragma once
// The packed layout of quantized weights (described in gemm.h) and what its kernels share.
//
// A panel is kQRows (16) rows; a panel-block is those 16 rows x one ggml block (32 or 256 k):
//   [low planes][high-bit plane][meta]
// Low planes: groups of 4 k x 16 rows in 64 bytes (row r's 4 bytes at 4r), so one 64-byte load
// is a vpdpbusd operand for 16 rows. 8-bit types: one group per 64 bytes, stored q + 128.
// 4-bit planes (every other type): two groups per 64 bytes, group 2p in the low nibbles and
// group 2p + 1 in the high ones.
// High-bit plane: Q5_0/Q5_1/Q5_K: 64 bytes per 32 k, bit t of row r's byte 4r + i is the fifth
// bit of k = 4t + i; Q6_K: 64 bytes per 16 k, bits 2t..2t+1 the top two bits of k = 4t + i.
// Meta (per row, 16 entries each): legacy types d (f16) [and m (f16)]; Q4_K/Q5_K d, dmin (f16),
// then the 6-bit scales and mins unpacked to bytes as [sub-block][row]; Q6_K d (f16) and the
// int8 scales as [sub-block][row]; Q8_K d (f32).
// Every stored value q is unsigned; a weight is s * (q - offset) + c, where s and c are the
// row's scale and (Q4_1/Q5_1/Q4_K/Q5_K) min of its scale unit (32 k; 16 for Q6_K).
#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/quant_blocks.h"
#include "kernels/schedule.h"

namespace sandwich::kernels {

constexpr int kQRows = 16;

struct QLayout {
  int block_elems;  // 32 or 256
  int unit;         // k per scale unit: 32, or 16 for Q6_K
  int qs_bytes;     // low planes
  int qh_bytes;     // high-bit plane
  int meta_bytes;
  int bytes;      // the whole panel-block
  int offset;     // subtracted from every stored value
  int low_bits;   // 4 or 8
  int high_bits;  // 0, 1 (Q5) or 2 (Q6_K)
  bool has_min;
};

constexpr QLayout qlayout(QType t) {
  QLayout l{};
  const bool k_type = t == QType::Q4_K || t == QType::Q5_K || t == QType::Q6_K || t == QType::Q8_K;
  l.block_elems = k_type ? kQKK : kQK;
  l.unit = t == QType::Q6_K ? 16 : 32;
  l.low_bits = t == QType::Q8_0 || t == QType::Q8_K ? 8 : 4;
  l.high_bits = t == QType::Q5_0 || t == QType::Q5_1 || t == QType::Q5_K ? 1
                : t == QType::Q6_K                                       ? 2
                                                                         : 0;
  l.has_min = t == QType::Q4_1 || t == QType::Q5_1 || t == QType::Q4_K || t == QType::Q5_K;
  l.offset = t == QType::Q4_0   ? 8
             : t == QType::Q5_0 ? 16
             : t == QType::Q6_K ? 32
             : l.low_bits == 8  ? 128
                                : 0;
  l.qs_bytes = l.block_elems / 4 * 64 * l.low_bits / 8;
  l.qh_bytes = l.high_bits == 0 ? 0 : l.block_elems / (l.high_bits == 1 ? 32 : 16) * 64;
  switch (t) {
    case QType::Q4_K:
    case QType::Q5_K:
      l.meta_bytes = 2 * 32 + 2 * 8 * kQRows;
      break;
    case QType::Q6_K:
      l.meta_bytes = 32 + 16 * kQRows;
      break;
    case QType::Q8_K:
      l.meta_bytes = 4 * kQRows;
      break;
    default:
      l.meta_bytes = l.has_min ? 64 : 32;
  }
  l.bytes = l.qs_bytes + l.qh_bytes + l.meta_bytes;
  return l;
}

// Stored value of element e (0..block_elems) of row r in a panel-block, and the row's scale s
// and min c of the unit holding e: the plain decoding every kernel is checked against.
int stored_value(const QLayout& l, const uint8_t* pb, int r, int e);
void unit_scale(QType t, const uint8_t* pb, int r, int unit, float* s, float* c);

// unpack_row of a quantized weight.
void unpack_row_quant(const PackedWeight& w, int64_t r, float* out);

// Activations quantized for the integer kernels: per row, int8 values (row stride kk), one
// scale per 32 k (the value times the scale is the f32 activation) and the sums of each 16
// values. The same quantization for every ISA, so every ISA computes the same integers.
struct QActs {
  const int8_t* q;
  const float* d;
  const int32_t* s16;
  int64_t kk;  // K columns (a multiple of 32)
};
void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16);

// c[m * 16 + r] (=, or += when accumulate) row m of the activations (at a's first k) times
// row r of the panel, over `blocks` panel-blocks starting at w. Every row sums its 32-k units in
// k order as
//   t = s * float(dot - offset * asum);  t = fma(c, float(asum), t);  acc = fma(t, d_act, acc)
// (Q6_K: t = d * float(sum over its two 16-k units of scale * (dot - 32 * asum))), from acc = c
// when accumulating, so every ISA and tile height gives the same bits, and so does a K range
// run in pieces, each continuing the last.
using QKernelFn = void (*)(const uint8_t* w, int64_t blocks, const QActs& a, float* c,
                           bool accumulate);

// The kernel for `rows` activation rows (1..quant_max_rows(isa)); nullptr if none.
QKernelFn quant_kernel(Isa isa, QType t, int rows);
int quant_max_rows(Isa isa);
// Whether the integer kernels of this ISA may run (AVX-512 ones need VNNI too).
bool quant_isa_usable(Isa isa);
// gemm() and gemm_silu_mul() of quantized weights.
void quant_gemm_run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& args,
                    ThreadTeam& team, const Schedule* schedule);
QKernelFn quant_kernel_scalar(QType t, int rows);
QKernelFn quant_kernel_avx2(QType t, int rows);
QKernelFn quant_kernel_avx512(QType t, int rows);

}  // namespace sandwich::kernels
