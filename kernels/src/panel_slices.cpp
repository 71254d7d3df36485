#include "kernels/panel_slices.h"

#include <stdexcept>
#include <string>

#include "kernels/microkernel.h"
#include "quant_layout.h"

namespace sandwich::kernels {

PackedWeight plan_packed_like(const PackedWeight& w, int64_t n, int64_t k) {
  return w.qtype ? plan_packed_weight_quant(n, k, *w.qtype) : plan_packed_weight(n, k, w.dtype);
}

ByteRange panel_k_bytes(const PackedWeight& w, int64_t p, int64_t k0, int64_t k1) {
  const int64_t g = shard_granularity_k(w);
  if (p < 0 || p >= w.panels() || k0 < 0 || k0 >= k1 || k1 > w.k || k0 % g != 0 ||
      (k1 % g != 0 && k1 != w.k))
    throw std::invalid_argument("panel_k_bytes: panel " + std::to_string(p) + ", K columns [" +
                                std::to_string(k0) + ", " + std::to_string(k1) + ") of a " +
                                std::to_string(w.n) + " x " + std::to_string(w.k) +
                                " weight (K ranges start on multiples of " + std::to_string(g) +
                                " and end on one or at k)");
  const size_t base = static_cast<size_t>(p) * w.panel_bytes();
  if (w.qtype) {
    // A quantized panel is a run of panel-blocks of one ggml block of K each.
    const QLayout l = qlayout(*w.qtype);
    return {base + static_cast<size_t>(k0 / l.block_elems) * l.bytes,
            static_cast<size_t>((k1 - k0) / l.block_elems) * l.bytes};
  }
  // An F32/BF16 panel is a run of K steps of k_group(dtype) columns, one row of the panel each.
  const size_t step = static_cast<size_t>(w.panel) * g * dtype_size(w.dtype);
  const int64_t s0 = k0 / g, s1 = (k1 + g - 1) / g;
  return {base + static_cast<size_t>(s0) * step, static_cast<size_t>(s1 - s0) * step};
}

}  // namespace sandwich::kernels
