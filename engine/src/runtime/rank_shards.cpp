#include "runtime/rank_shards.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/microkernel.h"

namespace sandwich::engine {

RankShards rank_shards(const ModelConfig& c, int rank, int n_ranks, int64_t ffn_granularity) {
  const int R = n_ranks;
  if (R < 1 || rank < 0 || rank >= R) throw std::invalid_argument("invalid rank view");
  if (c.n_kv_heads % R != 0)
    throw std::invalid_argument(std::to_string(R) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  RankShards s;
  s.kv_heads = partition(c.n_kv_heads, rank, R);
  const int64_t group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
  s.q_cols = {s.kv_heads.begin * group * hd, s.kv_heads.end * group * hd};
  s.kv_cols = {s.kv_heads.begin * hd, s.kv_heads.end * hd};
  // Column shards start on the GEMM's 64-column panels (FFN ones on `ffn_granularity`).
  auto split = [&](int64_t n, int64_t g) -> IndexRange {
    const IndexRange units = partition((n + g - 1) / g, rank, R);
    return {units.begin * g, std::min(n, units.end * g)};
  };
  s.ffn_cols = split(c.ffn_dim, ffn_granularity > 0 ? ffn_granularity : kernels::kPanel);
  s.vocab_cols = split(c.vocab_size, kernels::kPanel);
  if (s.ffn_cols.size() == 0 || s.vocab_cols.size() == 0)
    throw std::invalid_argument("the model is too small to split over " + std::to_string(R) +
                                " ranks");
  return s;
}

int64_t ffn_granularity(const kernels::PackedWeight& gate, const kernels::PackedWeight& up,
                        const kernels::PackedWeight& down) {
  return std::max({int64_t{kernels::kPanel}, kernels::shard_granularity_n(gate),
                   kernels::shard_granularity_n(up), kernels::shard_granularity_k(down)});
}

IndexRange panel_cover(IndexRange cols, int64_t n, int64_t panel) {
  const int64_t p = panel;
  return {cols.begin / p * p, std::min(n, (cols.end + p - 1) / p * p)};
}

}  // namespace sandwich::engine
