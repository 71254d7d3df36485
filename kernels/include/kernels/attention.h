#pragma once
// Causal attention over a paged KV cache, flash style (online softmax, one pass over the KV
// blocks), for prefill chunks and decode steps alike; grouped-query heads share their K/V loads.
//
// Paged layout of one layer: blocks of kKVBlock token slots. Block b holds, for every KV head h,
//   K: head_dim x kKVBlock elements, transposed (slot fastest), at h * head_dim * kKVBlock,
//   V: kKVBlock x head_dim elements, at (n_kv_heads + h) * head_dim * kKVBlock.
// K is transposed so that one 16-lane vector holds a key dimension for all 16 slots: the scores
// of a query against a block are head_dim broadcast-FMAs with no horizontal sums.
//
// Elements are F32 or BF16. BF16 halves the cache and the bytes a decode step reads; the
// kernels widen each element to f32 exactly and then do what they do on F32, so attention over
// a BF16 cache returns the bits it returns over an F32 cache holding the same, rounded values.
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

constexpr int kKVBlock = 16;

struct PagedKV {
  void* base = nullptr;      // this layer's block 0
  int64_t block_stride = 0;  // elements from one block to the next
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  DType dtype = DType::F32;  // of K and V: F32 or BF16

  // Element offsets from base.
  int64_t key_offset(int32_t block, int32_t head) const {
    return block * block_stride + int64_t{head} * head_dim * kKVBlock;
  }
  int64_t value_offset(int32_t block, int32_t head) const {
    return block * block_stride + int64_t{n_kv_heads + head} * head_dim * kKVBlock;
  }
  // T: float for F32, bf16_t for BF16.
  template <class T>
  T* key(int32_t block, int32_t head) const {
    return static_cast<T*>(base) + key_offset(block, head);
  }
  template <class T>
  T* value(int32_t block, int32_t head) const {
    return static_cast<T*>(base) + value_offset(block, head);
  }
  static int64_t block_elements(int32_t n_kv_heads, int32_t head_dim) {
    return int64_t{2} * n_kv_heads * head_dim * kKVBlock;
  }
};

// Whether the kernels store and read K/V of this type (F32 and BF16).
constexpr bool kv_dtype_supported(DType t) {
  return t == DType::F32 || t == DType::BF16;
}

// Writes one token's K and V (head_dim values for each of the heads [h0, h1)) into slot
// `pos` of a sequence whose blocks are listed in block_table; to BF16 with round to nearest
// even (f32_to_bf16). Throws std::invalid_argument for an unsupported kv.dtype.
void kv_store(const PagedKV& kv, const int32_t* block_table, int32_t pos, int32_t h0, int32_t h1,
              const float* k, const float* v);

// Block sizes of attention(): how fast it runs, never what it returns. Each query row still
// visits the KV blocks in order with the same arithmetic whatever their values (a pass only
// shares loads between rows; a step only keeps a row's accumulators in registers across its
// blocks), so outputs are bitwise the same. The defaults are the kernel before they existed.
struct AttentionParams {
  // Query rows (token x query head of the group) that share one pass over the KV blocks: each
  // K/V block is loaded once for all of them while it is in L1. Rounded up to a multiple of 4
  // (the register tile), at most kMaxPassRows.
  int32_t pass_rows = 4;
  // KV blocks per inner step: their scores are computed together (more independent FMA chains)
  // and a row's output accumulators stay in registers across them. At most kMaxStepBlocks.
  int32_t kv_blocks = 1;
  bool operator==(const AttentionParams&) const = default;
};
constexpr int32_t kMaxPassRows = 256;
constexpr int32_t kMaxStepBlocks = 64;

// One KV head of one sequence. q holds n_tok query tokens (row stride ldq); the `group` query
// heads of this KV head are at q + t*ldq + g*head_dim. Token t is at position start_pos + t and
// sees positions [0, start_pos + t]. Output rows are laid out like q (stride ldo). Throws
// std::invalid_argument for an unsupported kv.dtype.
void attention(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
               int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
               float* out, int64_t ldo, const AttentionParams& params = {});
void attention_ref(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
                   int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
                   float* out, int64_t ldo);

// The ISA attention() runs with for this head size: the widest of AVX-512 and AVX2 that
// cpu_has() allows where head_dim is even and at most 1024, else Scalar (attention_ref, which has
// no block sizes).
Isa attention_isa(int32_t head_dim);

}  // namespace sandwich::kernels
