#include "engine/runtime/kv_cache.h"

#include <cstdio>
#include <stdexcept>

#include "kernels/attention.h"

namespace sandwich::engine {

static_assert(KVCache::kBlockTokens == kernels::kKVBlock,
              "the KV cache's blocks must be the attention kernels' blocks");

size_t KVCache::token_bytes(const ModelConfig& c, KVCacheDType dtype, LayerRange layers) {
  return block_bytes(c, dtype, layers) / kBlockTokens;
}

size_t KVCache::block_bytes(const ModelConfig& c, KVCacheDType dtype, LayerRange layers) {
  return static_cast<size_t>(kernels::PagedKV::block_elements(c.n_kv_heads, c.head_dim)) *
         kv_cache_dtype_size(dtype) * resolve_layers(layers, c.n_layers).size();
}

size_t KVCache::bytes_for_tokens(const ModelConfig& c, int64_t tokens, KVCacheDType dtype,
                                 LayerRange layers) {
  return static_cast<size_t>(blocks_for(tokens)) * block_bytes(c, dtype, layers);
}

size_t KVCache::bytes_for_blocks(const ModelConfig& c, int32_t blocks, KVCacheDType dtype,
                                 LayerRange layers) {
  if (blocks < 1)
    throw std::invalid_argument("a KV cache needs at least one block, not " +
                                std::to_string(blocks));
  return static_cast<size_t>(blocks) * block_bytes(c, dtype, layers);
}

KVCache::KVCache(const ModelConfig& c, size_t memory_bytes, KVCacheDType dtype, LayerRange layers)
    : layers_(resolve_layers(layers, c.n_layers)),
      n_layers_(c.n_layers),
      n_kv_heads_(c.n_kv_heads),
      head_dim_(c.head_dim),
      dtype_(dtype) {
  const size_t per_block = block_bytes(c, dtype, layers_);
  const size_t blocks = memory_bytes / per_block;
  if (blocks == 0)
    throw std::runtime_error("KV cache budget of " + std::to_string(memory_bytes) +
                             " bytes is below one block (" + std::to_string(per_block) + " bytes)");
  if (blocks > INT32_MAX) throw std::runtime_error("KV cache budget too large");
  num_blocks_ = static_cast<int32_t>(blocks);
  block_bytes_ = per_block;
  block_elements_ = kernels::PagedKV::block_elements(n_kv_heads_, head_dim_);
  layer_bytes_ = static_cast<size_t>(num_blocks_) * block_elements_ * kv_cache_dtype_size(dtype);
  region_ = SharedRegion("sandwich-kv", layer_bytes_ * layers_.size());
  region_.allocate(layer_bytes_ * layers_.size());
  free_.reserve(num_blocks_);
  // Hand out low block ids first: pop_back takes from the end.
  for (int32_t b = num_blocks_ - 1; b >= 0; --b) free_.push_back(b);
}

void* KVCache::layer_data(int layer) const {
  if (layer < layers_.begin || layer >= layers_.end)
    throw std::out_of_range("KV cache of layers " + layer_range_text(layers_) + " has no layer " +
                            std::to_string(layer));
  return region_.data() + static_cast<size_t>(layer - layers_.begin) * layer_bytes_;
}

std::string KVCache::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s, %d blocks (%lld tokens, %zu bytes each), %.1f MiB",
                std::string(kv_cache_dtype_name(dtype_)).c_str(), num_blocks_,
                static_cast<long long>(num_blocks_) * kBlockTokens, block_bytes_ / kBlockTokens,
                static_cast<double>(bytes()) / (1 << 20));
  if (layers_.size() == n_layers_) return buf;
  return buf + (", layers " + layer_range_text(layers_) + " of " + std::to_string(n_layers_));
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

}  // namespace sandwich::engine
