#pragma once
// The attention kernels' view of one layer of the KV cache (private to engine/).
#include "engine/runtime/kv_cache.h"
#include "kernels/attention.h"

namespace sandwich::engine {

inline kernels::PagedKV paged_kv(const KVCache& cache, int layer) {
  kernels::PagedKV kv;
  kv.base = cache.layer_data(layer);
  kv.block_stride = cache.block_elements();
  kv.n_kv_heads = cache.n_kv_heads();
  kv.head_dim = cache.head_dim();
  kv.dtype = cache.dtype() == KVCacheDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
  return kv;
}

}  // namespace sandwich::engine
