#pragma once
// The packed layout of quantized weights (described in gemm.h) and what its kernels share.
//
// A panel is kQRows (16) rows; a panel-block is those 16 rows x one ggml block (32 or 256 k),
// laid out in the order the kernels read it, so each panel is one forward stream:
//   [meta][chunk 0][chunk 1]...   a chunk per 32 k: [its low planes][its high-bit plane]
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
// How far ahead of the weights it reads a prefetching kernel asks for more, into L2
// (prefetcht1): a few microseconds of a core's DRAM stream, enough to cover the latency while it
// computes. Into L1 (prefetcht0) each request would hold one of the core's few L1 miss buffers
// until its line arrives, and when DRAM is fast those cap the stream (on Zen 4, 2 threads, in
// turn with a stream of 55-60 GB/s: 0.81-0.87 of it with T0 at 4 KB, 0.82-0.88 with T1 at 6 KB;
// at 25-35 GB/s both 0.9-0.98; T1 at 8 KB was the best when fast and the worst when slow). The
// schedule's `prefetch` turns it off (the GEMM tuner measures both).
constexpr int kQPrefetchBytes = 6144;

// f(), instantiated for the type t: one switch for every per-type table of kernels.
template <class F>
decltype(auto) dispatch_qtype(QType t, F&& f) {
  switch (t) {
    case QType::Q4_0:
      return f.template operator()<QType::Q4_0>();
    case QType::Q4_1:
      return f.template operator()<QType::Q4_1>();
    case QType::Q5_0:
      return f.template operator()<QType::Q5_0>();
    case QType::Q5_1:
      return f.template operator()<QType::Q5_1>();
    case QType::Q8_0:
      return f.template operator()<QType::Q8_0>();
    case QType::Q4_K:
      return f.template operator()<QType::Q4_K>();
    case QType::Q5_K:
      return f.template operator()<QType::Q5_K>();
    case QType::Q6_K:
      return f.template operator()<QType::Q6_K>();
    case QType::Q8_K:
      break;
  }
  return f.template operator()<QType::Q8_K>();
}

struct QLayout {
  int block_elems;  // 32 or 256
  int unit;         // k per scale unit: 32, or 16 for Q6_K
  int qs_bytes;     // low planes
  int qh_bytes;     // high-bit plane
  int meta_bytes;
  int chunk_qs;     // low planes of one 32-k chunk
  int chunk_bytes;  // one 32-k chunk: low planes, then high-bit plane
  int bytes;        // the whole panel-block
  int offset;       // subtracted from every stored value
  int low_bits;     // 4 or 8
  int high_bits;    // 0, 1 (Q5) or 2 (Q6_K)
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
  l.chunk_qs = 32 * kQRows * l.low_bits / 8;
  l.chunk_bytes = l.chunk_qs + (l.high_bits == 0 ? 0 : l.high_bits == 1 ? 64 : 128);
  l.bytes = l.qs_bytes + l.qh_bytes + l.meta_bytes;
  return l;
}

// 32-k chunk c of a panel-block.
constexpr int chunk_offset(const QLayout& l, int c) {
  return l.meta_bytes + c * l.chunk_bytes;
}

// Stored value of element e (0..block_elems) of row r in a panel-block, and the row's scale s
// and min c of the unit holding e: the plain decoding every kernel is checked against.
int stored_value(const QLayout& l, const uint8_t* pb, int r, int e);
void unit_scale(QType t, const uint8_t* pb, int r, int unit, float* s, float* c);

// unpack_row of a quantized weight.
void unpack_row_quant(const PackedWeight& w, int64_t r, float* out);

// Activations quantized for the integer kernels: per row, int8 values (row stride kk), one
// scale per 32 k (the value times the scale is the f32 activation), the sums of each 16 values,
// and per 32 k the scale times the 32 values' sum (ds, for the types with a min). The same
// numbers from every ISA's quantizer, so every ISA computes the same integers.
struct QActs {
  const int8_t* q;
  const float* d;
  const int32_t* s16;
  const float* ds;
  int64_t kk;  // K columns (a multiple of 32)
};
// The quantizer of `isa` (AVX-512, AVX2 or scalar; the same bits from each).
void quantize_activations(Isa isa, const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16, float* ds);

// c[m * 16 + r] (=, or += when accumulate) row m of the activations (at a's first k) times
// row r of the panel, over `blocks` panel-blocks starting at w. With d_a, ds the activation
// row's scale and scaled sum of a 32-k unit, isum the unit's integer sum
//   dot - offset * asum                     (every type but Q4_K/Q5_K/Q6_K)
//   sc * dot                                (Q4_K, Q5_K: the 6-bit scale)
//   sc0 * (dot0 - 32 asum0) + sc1 * (...)   (Q6_K: its two 16-k units and int8 scales)
// 32-value blocks add, in k order,  acc = fma(d * d_a, float(isum), acc),  then for Q4_1/Q5_1
// acc = fma(m, ds, acc).  256-value blocks sum  blk = fma(float(isum), d_a, blk)  over their
// units from 0, then  acc = fma(d, blk, acc),  then for Q4_K/Q5_K  acc = fma(-dmin, t0 + t1,
// acc)  where t0 and t1 sum float(mn) * ds over the even and the odd units (mul, then fma).  Every
// ISA and tile height gives the same bits, and so does a K range run in pieces, each continuing the
// last (acc starts from c when accumulating).
using QKernelFn = void (*)(const uint8_t* w, int64_t blocks, const QActs& a, float* c,
                           bool accumulate);

// The kernel for `rows` activation rows (1..quant_max_rows(isa)); nullptr if none. With
// `prefetch`, it also asks for the weights kQPrefetchBytes ahead of those it reads (the AVX2
// and AVX-512 ones): decode streams panels from DRAM while it computes.
QKernelFn quant_kernel(Isa isa, QType t, int rows, bool prefetch = false);
int quant_max_rows(Isa isa);
// Whether the integer kernels of this ISA may run (AVX-512 ones need VNNI too).
bool quant_isa_usable(Isa isa);
// gemm() and gemm_silu_mul() of quantized weights.
void quant_gemm_run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& args,
                    ThreadTeam& team, const Schedule* schedule);

// One ISA's integer kernels and activation quantizer: quant_kernels_<isa>.cpp fills its table,
// and the lookups above take the table of the schedule's ISA.
struct QuantKernels {
  Isa isa;
  int max_rows;  // activation rows of the tallest tile
  // The kernel for `rows` rows, nullptr if none; `prefetch` as for quant_kernel (the scalar
  // kernels ignore it).
  QKernelFn (*kernel)(QType t, int rows, bool prefetch);
  void (*quantize_activations)(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                               float* d, int32_t* s16, float* ds);
};
extern const QuantKernels kQuantAvx512;
extern const QuantKernels kQuantAvx2;
extern const QuantKernels kQuantScalar;

}  // namespace sandwich::kernels
