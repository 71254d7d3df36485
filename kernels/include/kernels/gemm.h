#pragma once
// Weight matrices packed once at load, and the GEMM that multiplies activations by them.
// A weight W has n output features (rows) and k input features (columns), as in a Linear layer:
// y[m x n] = x[m x k] * W^T.
//
// Packed layout: W is cut into panels of kPanel (64) output columns; each panel holds K in
// order, one 256-byte row (four cache lines) per K step:
//   F32:  panel p, k      -> 64 floats W[64p + c][k]                            (c = 0..63)
//   BF16: panel p, pair j -> 64 (W[64p + c][2j], W[64p + c][2j + 1]) pairs      (the operand
//         order of vdpbf16ps, so one 64-byte load feeds 16 columns x 2 k)
// K is padded to whole steps (even, for BF16) and N to whole panels, with zeros. Panels follow
// each other, so a thread's run of panels is one sequential stream, and a K range of a panel
// is a contiguous sub-range: tensor-parallel ranks use shards of one packed matrix by column
// range (multiples of shard_granularity_n) or K range (starting on shard_granularity_k).
// Buffers: 64-byte alignment is required; 2 MiB alignment with transparent huge pages
// (madvise MADV_HUGEPAGE) is recommended, since decode streams every byte once per token and
// 4 KiB pages add a TLB miss per page.
//
// Quantized weights (PackedWeight::qtype set: ggml's Q4_0 ... Q8_K blocks, quant_blocks.h) keep
// their bits but not ggml's byte order: panels of 16 rows (one 512-bit vector of int32 sums),
// each a run of panel-blocks (16 rows x one ggml block of 32 or 256 k) with the rows' 4-k
// groups interleaved, so one 64-byte load feeds vpdpbusd for 16 rows and a panel is one
// sequential stream (details in kernels/src/quant_layout.h). Shards start on a panel (16 rows)
// and on a block (32 or 256 k); a K shard that would cut a block is refused.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels/dtype.h"
#include "kernels/microkernel.h"
#include "kernels/quant_blocks.h"
#include "kernels/schedule.h"
#include "kernels/thread_team.h"

namespace sandwich::kernels {

struct PackedWeight {
  DType dtype = DType::F32;  // storage type: F32 or BF16 (BF16 for quantized weights)
  // Set for quantized weights: the ggml block type the panels hold. dtype then names the type
  // they widen to when a schedule unpacks them for the BF16 kernels (Schedule::unpack_bf16).
  std::optional<QType> qtype;
  int64_t n = 0;         // rows (output features)
  int64_t k = 0;         // columns (input features)
  int32_t panel = 0;     // columns of a packed panel
  size_t bytes = 0;      // size of the packed buffer
  void* data = nullptr;  // set by the owner (usually the shared-memory weight region)

  int64_t panels() const { return (n + panel - 1) / panel; }
  int64_t k_padded() const { return !qtype && dtype == DType::BF16 ? (k + 1) / 2 * 2 : k; }
  // Bytes of one panel (all of K).
  size_t panel_bytes() const {
    if (qtype) return quant_panel_bytes();
    return static_cast<size_t>(panel) * static_cast<size_t>(k_padded()) * dtype_size(dtype);
  }
  size_t quant_panel_bytes() const;
};

// Decides the packed layout of an n x k weight stored as `storage` (F32 or BF16) and fills every
// field but data. The owner allocates `bytes` (64-byte aligned; 2 MiB for huge pages) and sets
// data.
PackedWeight plan_packed_weight(int64_t n, int64_t k, DType storage);

// Packs a row-major source (n x k elements of src_type, rows src_stride elements apart) into
// w.data, converting to w.dtype. If row_map is given, packed row r comes from source row
// row_map[r] (used to reorder q/k rows for RoPE). Parallel over the team if one is given.
void pack_weight(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map = nullptr, ThreadTeam* team = nullptr);
// Packs rows [row0, row1) only, from src pointing at row0; row0 must be a multiple of the panel
// and row1 one too (or n). Lets a loader stream a matrix through a small buffer.
void pack_weight_rows(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                      int64_t row0, int64_t row1, ThreadTeam* team = nullptr);

// The layout of an n x k weight of ggml blocks of type t (k a multiple of its block size, else
// std::invalid_argument): every field but data, as plan_packed_weight.
PackedWeight plan_packed_weight_quant(int64_t n, int64_t k, QType t);
// Repacks n rows of ggml blocks (row i at blocks + i * src_row_bytes: k / block_elems blocks,
// as a GGUF file stores them) into w.data, once at load. row_map as pack_weight's.
void pack_weight_quant(const PackedWeight& w, const void* blocks, int64_t src_row_bytes,
                       const int64_t* row_map = nullptr, ThreadTeam* team = nullptr);
// Rows [row0, row1) only, blocks pointing at row0 (whole panels of 16, as pack_weight_rows).
void pack_weight_quant_rows(const PackedWeight& w, const void* blocks, int64_t src_row_bytes,
                            int64_t row0, int64_t row1, ThreadTeam* team = nullptr);
// Row r of a quantized weight as ggml blocks again, byte for byte as packed (Q8_K's bsums are
// recomputed). unpack_row dequantizes these with dequantize_ref: ggml's floats bit for bit.
void unpack_row_blocks(const PackedWeight& w, int64_t r, void* blocks);

// Output columns a shard may start at: multiples of the panel (64; 16 for quantized weights).
int64_t shard_granularity_n(const PackedWeight& w);
// Input columns a K shard may start at: multiples of the K step (2 for BF16, 1 for F32). Any
// width works: columns past k1 are multiplied by zeros. Quantized weights: the block size (32
// or 256), and a shard must also end on one.
int64_t shard_granularity_k(const PackedWeight& w);

// Unpacks row r (k values) as f32: the embedding lookup and the reference path use it.
void unpack_row(const PackedWeight& w, int64_t r, float* out);

enum class Epilogue : uint8_t {
  Store,       // y = x W^T
  Accumulate,  // y += x W^T (residual add fused into the store)
};

struct GemmArgs {
  const float* x = nullptr;  // m rows of k' activations, row stride ldx
  int64_t ldx = 0;
  int64_t m = 0;
  float* y = nullptr;  // m rows of (n1 - n0) outputs, row stride ldy
  int64_t ldy = 0;
  // Output columns [n0, n1) and input columns [k0, k1) of W: a tensor-parallel rank's shard.
  // x holds only the k1 - k0 columns of the shard. n1/k1 < 0 mean "to the end". n0 must be a
  // multiple of shard_granularity_n (64) and k0 of shard_granularity_k (2 for BF16).
  int64_t n0 = 0, n1 = -1;
  int64_t k0 = 0, k1 = -1;
  Epilogue epilogue = Epilogue::Store;
  // Every output element sums its K products in one fixed order, whatever m, the row's place
  // among the m and the schedule: no split-k, and micro-kernels with one accumulator set
  // (MicroKernel::one_set), whose elements add their K steps one after the other in every tile
  // height and across K blocks. A row's output is then bitwise the same in any batch. The
  // M and N blocking, tiles and threads still vary with the shape: they pick which elements a
  // call computes, not how one is summed.
  // Quantized weights on the integer path are batch-invariant whatever this flag: a row's
  // activations are quantized alone and every output sums its scale units in k order with the
  // same float operations in every ISA and tile height (bitwise equal across AVX-512, AVX2 and
  // scalar too). With this flag set, a schedule asking for the BF16-unpacking path is replaced
  // by the integer path's default, so that no M changes the bits.
  bool batch_invariant = false;
  // No split-k (the paper's "w/o split-k" ablation): a schedule's K-splitting threads go to N
  // or M instead (without_split_k), whether it came from a tuned table or the cost model; its
  // micro-kernel and slice stay as chosen. The sums keep their usual kernels.
  bool no_split_k = false;
};

// y = x W^T over the team's threads, under `schedule` or the cost model's default. A
// batch-invariant or no_split_k call runs it without split-k (without_split_k).
void gemm(const PackedWeight& w, const GemmArgs& a, ThreadTeam& team,
          const Schedule* schedule = nullptr);

// out[m x (n1-n0)] = silu(x Wg^T) * (x Wu^T): the SwiGLU gate/up pair in one pass over x, so the
// intermediate activations never leave the cache. a.y/a.ldy is the output.
void gemm_silu_mul(const PackedWeight& gate, const PackedWeight& up, const GemmArgs& a,
                   ThreadTeam& team, const Schedule* schedule = nullptr);

// Plain reference: y[m][n] = sum_k x[m][k] * W[n][k] on the unpacked matrix, in double.
void gemm_ref(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t m, int64_t n,
              int64_t k, float* y, int64_t ldy);

}  // namespace sandwich::kernels
