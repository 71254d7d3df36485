#pragma once
// The paged KV cache: fixed blocks of kBlockTokens token slots in shared memory (so ranks of
// another service configuration can read any head), a block table per sequence, and a free list.
// Sized from a memory budget.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model_config.h"
#include "engine/shared_region.h"

namespace sandwich {

class KVCache {
 public:
  // Token slots per block: the attention kernels' block size.
  static constexpr int32_t kBlockTokens = 16;

  // Throws if the budget does not hold even one block.
  KVCache(const ModelConfig& c, size_t memory_bytes);

  // Bytes one block takes over all layers (K and V, f32).
  static size_t block_bytes(const ModelConfig& c);
  // Bytes needed for one sequence of `tokens` positions.
  static size_t bytes_for_tokens(const ModelConfig& c, int64_t tokens);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t used_blocks() const { return num_blocks_ - free_blocks(); }
  const SharedRegion& region() const { return region_; }

  // The layout the attention kernels read (paged_kv.h): each layer's blocks, block_floats()
  // floats apart, hold K and V of n_kv_heads() heads of head_dim() each.
  float* layer_data(int layer) const;
  int64_t block_floats() const { return block_floats_; }
  int32_t n_kv_heads() const { return n_kv_heads_; }
  int32_t head_dim() const { return head_dim_; }

  // Grows `table` so it covers `tokens` positions; false (table unchanged) if not enough blocks.
  bool reserve(std::vector<int32_t>& table, int64_t tokens);
  // Returns all blocks of `table` to the free list and clears it.
  void release(std::vector<int32_t>& table);

  static int64_t blocks_for(int64_t tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }

 private:
  int32_t n_layers_, n_kv_heads_, head_dim_;
  int32_t num_blocks_ = 0;
  int64_t block_floats_ = 0;
  int64_t layer_floats_ = 0;
  SharedRegion region_;
  std::vector<int32_t> free_;
};

}  // namespace sandwich
