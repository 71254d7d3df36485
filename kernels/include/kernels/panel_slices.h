#pragma once
// Slices of packed weights, for tensor-parallel shards kept apart from the whole matrix (a NUMA
// node's copy of its ranks' part). Every packed layout holds K in order inside a panel (F32/BF16
// K steps, quantized panel-blocks), so K columns [k0, k1) of one panel are one contiguous byte
// range, and a K shard of the matrix is one such range per panel. Copied panel by panel to the
// panels of plan_packed_like(w, w.n, k1 - k0), they are the shard as a matrix of its own, which
// gemm() reads like any other. Nothing here depends on the byte order inside a K step or a
// panel-block.
#include <cstddef>
#include <cstdint>

#include "kernels/gemm.h"

namespace sandwich::kernels {

// The layout of an n x k weight stored as w is (its dtype, or its block type): every field but
// data, as plan_packed_weight and plan_packed_weight_quant give.
PackedWeight plan_packed_like(const PackedWeight& w, int64_t n, int64_t k);

// Bytes [offset, offset + bytes) of w's buffer.
struct ByteRange {
  size_t offset = 0;
  size_t bytes = 0;
  bool operator==(const ByteRange&) const = default;
};

// The bytes of panel p that hold K columns [k0, k1). k0 must be a multiple of
// shard_granularity_k(w), and k1 one too or w.k (BF16's last pair and its zero padding come
// with k1 = w.k); else std::invalid_argument.
ByteRange panel_k_bytes(const PackedWeight& w, int64_t p, int64_t k0, int64_t k1);

}  // namespace sandwich::kernels
