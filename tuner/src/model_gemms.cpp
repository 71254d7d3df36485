// A model's GEMM shape keys per rank, following engine/src/forward.cpp's column and row splits.
#include "tuner/model_gemms.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/partition.h"
#include "kernels/microkernel.h"

namespace sandwich::tuner {

std::vector<kernels::GemmKey> model_gemms(const ModelConfig& c, int ranks, int threads,
                                          kernels::DType weights) {
  const int R = ranks;
  if (R < 1 || threads < 1) throw std::invalid_argument("model_gemms: ranks and threads >= 1");
  if (c.n_kv_heads < 1 || c.n_kv_heads % R != 0)
    throw std::invalid_argument(std::to_string(R) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  const int64_t P = kernels::kPanel;
  std::vector<kernels::GemmKey> keys;
  auto add = [&](int64_t n, int64_t k, bool pair) {
    const kernels::GemmKey key{n, k, weights, threads, pair};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (int r = 0; r < R; ++r) {
    const IndexRange heads = partition(c.n_kv_heads, r, R);
    const int64_t group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
    const IndexRange q{heads.begin * group * hd, heads.end * group * hd};
    const IndexRange kv{heads.begin * hd, heads.end * hd};
    auto panel_split = [&](int64_t n) -> IndexRange {
      const IndexRange panels = partition((n + P - 1) / P, r, R);
      return {panels.begin * P, std::min(n, panels.end * P)};
    };
    const IndexRange ffn = panel_split(c.ffn_dim), vocab = panel_split(c.vocab_size);
    if (ffn.size() == 0 || vocab.size() == 0)
      throw std::invalid_argument("the model is too small to split over " + std::to_string(R) +
                                  " ranks");
    // Column shards that do not start on a panel run panel-aligned (gemm_columns).
    auto column_n = [&](const IndexRange& cols, int64_t n_total) {
      if (cols.begin % P == 0) return cols.size();
      const int64_t b0 = cols.begin / P * P;
      const int64_t b1 = std::min(n_total, (cols.end + P - 1) / P * P);
      return b1 - b0;
    };
    add(column_n(q, c.q_dim()), c.dim, false);    // q
    add(column_n(kv, c.kv_dim()), c.dim, false);  // k, v
    add(c.dim, q.size(), false);                  // o: row-parallel over the rank's heads
    add(ffn.size(), c.dim, true);                 // gate/up
    add(c.dim, ffn.size(), false);                // down: row-parallel
    add(vocab.size(), c.dim, false);              // LM head
  }
  return keys;
}

std::vector<kernels::GemmKey> lm_head_gemms(const ModelConfig& c, int ranks, int threads,
                                            kernels::DType weights) {
  model_gemms(c, ranks, threads, weights);  // the same checks
  const int64_t P = kernels::kPanel;
  std::vector<kernels::GemmKey> keys;
  for (int r = 0; r < ranks; ++r) {
    const IndexRange panels = partition((c.vocab_size + P - 1) / P, r, ranks);
    const int64_t n = std::min<int64_t>(c.vocab_size, panels.end * P) - panels.begin * P;
    const kernels::GemmKey key{n, c.dim, weights, threads, false};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

}  // namespace sandwich::tuner
