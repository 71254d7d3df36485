#pragma once
// The paged KV cache: fixed blocks of kBlockTokens token slots in shared memory (so ranks of
// another service configuration can read any head), a block table per sequence, and a free list.
// Sized from a memory budget. Elements are BF16 by default (--kv-cache-dtype), F32 on request.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "engine/formats/layer_range.h"
#include "engine/formats/model_config.h"
#include "engine/runtime/shared_region.h"

namespace sandwich::engine {

// The element type of K and V: BF16 halves the memory and the bytes a decode step reads.
enum class KVCacheDType { BF16, F32 };
// --kv-cache-dtype, in vLLM's spelling; auto is bf16.
inline constexpr EnumName<KVCacheDType> kKVCacheDTypeNames[] = {
    {KVCacheDType::BF16, "bf16"}, {KVCacheDType::BF16, "bfloat16"}, {KVCacheDType::BF16, "auto"},
    {KVCacheDType::F32, "f32"},   {KVCacheDType::F32, "float32"},   {KVCacheDType::F32, "fp32"}};
inline std::string_view kv_cache_dtype_name(KVCacheDType t) {
  return name_of(t, kKVCacheDTypeNames);
}
constexpr size_t kv_cache_dtype_size(KVCacheDType t) {
  return t == KVCacheDType::F32 ? 4 : 2;
}
constexpr KVCacheDType kDefaultKVCacheDType = KVCacheDType::BF16;

class KVCache {
 public:
  // Token slots per block: the attention kernels' block size.
  static constexpr int32_t kBlockTokens = 16;

  // Throws if the budget does not hold even one block. A pipeline stage's cache holds its
  // `layers` only (blocks sized for them); a bad range throws std::runtime_error.
  KVCache(const ModelConfig& c, size_t memory_bytes, KVCacheDType dtype = kDefaultKVCacheDType,
          LayerRange layers = {});

  // Bytes one token slot takes over all layers (K and V), or over `layers`.
  static size_t token_bytes(const ModelConfig& c, KVCacheDType dtype = kDefaultKVCacheDType,
                            LayerRange layers = {});
  // Bytes one block takes over all layers, or over `layers`.
  static size_t block_bytes(const ModelConfig& c, KVCacheDType dtype = kDefaultKVCacheDType,
                            LayerRange layers = {});
  // Bytes needed for one sequence of `tokens` positions.
  static size_t bytes_for_tokens(const ModelConfig& c, int64_t tokens,
                                 KVCacheDType dtype = kDefaultKVCacheDType, LayerRange layers = {});
  // The budget that makes a cache of exactly `blocks` blocks (a stage matching the head's).
  static size_t bytes_for_blocks(const ModelConfig& c, int32_t blocks,
                                 KVCacheDType dtype = kDefaultKVCacheDType, LayerRange layers = {});

  int32_t num_blocks() const { return num_blocks_; }
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t used_blocks() const { return num_blocks_ - free_blocks(); }
  const SharedRegion& region() const { return region_; }
  KVCacheDType dtype() const { return dtype_; }
  size_t bytes() const { return static_cast<size_t>(num_blocks_) * block_bytes_; }
  // "bf16, 4096 blocks (65536 tokens, 9216 bytes each), 576.0 MiB": for start-up logs; a
  // stage's ends with ", layers 11-21 of 22".
  std::string describe() const;

  // The layout the attention kernels read (paged_kv.h): each layer's blocks, block_elements()
  // elements of dtype() apart, hold K and V of n_kv_heads() heads of head_dim() each. `layer` is
  // the model's index; outside layers() it throws std::out_of_range.
  void* layer_data(int layer) const;
  // The layers held, resolved (end never -1).
  LayerRange layers() const { return layers_; }
  int64_t block_elements() const { return block_elements_; }
  int32_t n_kv_heads() const { return n_kv_heads_; }
  int32_t head_dim() const { return head_dim_; }

  // Grows `table` so it covers `tokens` positions; false (table unchanged) if not enough blocks.
  bool reserve(std::vector<int32_t>& table, int64_t tokens);
  // Returns all blocks of `table` to the free list and clears it.
  void release(std::vector<int32_t>& table);

  static int64_t blocks_for(int64_t tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }

 private:
  LayerRange layers_;
  int32_t n_layers_, n_kv_heads_, head_dim_;
  KVCacheDType dtype_;
  int32_t num_blocks_ = 0;
  size_t block_bytes_ = 0;
  int64_t block_elements_ = 0;
  size_t layer_bytes_ = 0;
  SharedRegion region_;
  std::vector<int32_t> free_;
};

}  // namespace sandwich::engine
