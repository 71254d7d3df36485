#include "engine/kv_cache.h"

#include <stdexcept>

#include "kernels/attention.h"

namespace sandwich {

static_assert(KVCache::kBlockTokens == kernels::kKVBlock,
              "the KV cache's blocks must be the attention kernels' blocks");

size_t KVCache::block_bytes(const ModelConfig& c) {
  return static_cast<size_t>(kernels::PagedKV::block_floats(c.n_kv_heads, c.head_dim)) * 4 *
         c.n_layers;
}

size_t KVCache::bytes_for_tokens(const ModelConfig& c, int64_t tokens) {
  return static_cast<size_t>(blocks_for(tokens)) * block_bytes(c);
}

KVCache::KVCache(const ModelConfig& c, size_t memory_bytes)
    : n_layers_(c.n_layers), n_kv_heads_(c.n_kv_heads), head_dim_(c.head_dim) {
  const size_t per_block = block_bytes(c);
  const size_t blocks = memory_bytes / per_block;
  if (blocks == 0)
    throw std::runtime_error("KV cache budget of " + std::to_string(memory_bytes) +
                             " bytes is below one block (" + std::to_string(per_block) + " bytes)");
  if (blocks > INT32_MAX) throw std::runtime_error("KV cache budget too large");
  num_blocks_ = static_cast<int32_t>(blocks);
  block_floats_ = kernels::PagedKV::block_floats(n_kv_heads_, head_dim_);
  layer_floats_ = int64_t{num_blocks_} * block_floats_;
  region_ = SharedRegion("sandwich-kv", static_cast<size_t>(layer_floats_) * 4 * n_layers_);
  region_.allocate(static_cast<size_t>(layer_floats_) * 4 * n_layers_);
  free_.reserve(num_blocks_);
  // Hand out low block ids first: pop_back takes from the end.
  for (int32_t b = num_blocks_ - 1; b >= 0; --b) free_.push_back(b);
}

float* KVCache::layer_data(int layer) const {
  return reinterpret_cast<float*>(region_.data()) + layer * layer_floats_;
}

bool KVCache::reserve(std::vector<int32_t>& table, int64_t tokens) {
  const int64_t need = blocks_for(tokens) - static_cast<int64_t>(table.size());
  if (need <= 0) return true;
  if (need > static_cast<int64_t>(free_.size())) return false;
  for (int64_t i = 0; i < need; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KVCache::release(std::vector<int32_t>& table) {
  for (int32_t b : table) free_.push_back(b);
  table.clear();
}

}  // namespace sandwich
