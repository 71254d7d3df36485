// A model's GEMM shape keys per rank, following engine/src/runtime/forward.cpp's column and row
// splits (rank_shards and gemm_columns there).
#include "tuner/model_gemms.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/partition.h"
#include "kernels/microkernel.h"

namespace sandwich::tuner {
namespace {

kernels::GemmKey key_of(int64_t n, int64_t k, const std::string& type, int threads, bool pair) {
  kernels::GemmKey key{n, k, kernels::DType::BF16, threads, pair};
  if (!kernels::set_weight_type(key, type))
    throw std::invalid_argument("a weight matrix of type \"" + type +
                                "\", which no GEMM runs (f32, bf16 or a quantized type)");
  return key;
}

// Output columns a column shard of a matrix of this type may start at (shard_granularity_n):
// the 64-column panel, or a quantized panel of 16 rows.
int64_t column_granularity(const std::string& type) {
  return key_of(1, 1, type, 1, false).qtype ? 16 : kernels::kPanel;
}

// Input columns a row-parallel shard must start on (shard_granularity_k): a quantized block.
int64_t k_granularity(const std::string& type) {
  const kernels::GemmKey key = key_of(1, 1, type, 1, false);
  return key.qtype ? kernels::qtype_info(*key.qtype).block_elems : 1;
}

void check(const engine::ModelConfig& c, int ranks, int threads, const engine::MatrixTypes& types) {
  if (ranks < 1 || threads < 1) throw std::invalid_argument("model_gemms: ranks and threads >= 1");
  if (c.n_kv_heads < 1 || c.n_kv_heads % ranks != 0)
    throw std::invalid_argument(std::to_string(ranks) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  if (types.layers.size() != static_cast<size_t>(c.n_layers))
    throw std::invalid_argument("model_gemms: matrix types of " +
                                std::to_string(types.layers.size()) + " layers for a model of " +
                                std::to_string(c.n_layers));
}

// Rank r's FFN and vocabulary columns, as engine/src/runtime/rank_shards.cpp splits them: FFN
// shards start on the panel, or on the down projection's block when that is larger.
IndexRange split(int64_t n, int64_t g, int r, int R) {
  const IndexRange units = partition((n + g - 1) / g, r, R);
  return {units.begin * g, std::min(n, units.end * g)};
}

}  // namespace

std::vector<kernels::GemmKey> model_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                          const engine::MatrixTypes& types) {
  check(c, ranks, threads, types);
  const int R = ranks;
  int64_t ffn_g = kernels::kPanel;
  for (const engine::LayerMatrixTypes& L : types.layers)
    ffn_g = std::max(ffn_g, k_granularity(L.down));
  std::vector<kernels::GemmKey> keys;
  auto add = [&](int64_t n, int64_t k, const std::string& type, bool pair) {
    const kernels::GemmKey key = key_of(n, k, type, threads, pair);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (int r = 0; r < R; ++r) {
    const IndexRange heads = partition(c.n_kv_heads, r, R);
    const int64_t group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
    const IndexRange q{heads.begin * group * hd, heads.end * group * hd};
    const IndexRange kv{heads.begin * hd, heads.end * hd};
    const IndexRange ffn = split(c.ffn_dim, ffn_g, r, R);
    const IndexRange vocab = split(c.vocab_size, kernels::kPanel, r, R);
    if (ffn.size() == 0 || vocab.size() == 0)
      throw std::invalid_argument("the model is too small to split over " + std::to_string(R) +
                                  " ranks");
    // Column shards that do not start on the matrix's panel run panel-aligned (gemm_columns).
    auto column_n = [&](const IndexRange& cols, int64_t n_total, const std::string& type) {
      const int64_t g = column_granularity(type);
      if (cols.begin % g == 0) return cols.size();
      const int64_t b0 = cols.begin / g * g;
      const int64_t b1 = std::min(n_total, (cols.end + g - 1) / g * g);
      return b1 - b0;
    };
    for (const engine::LayerMatrixTypes& L : types.layers) {
      add(column_n(q, c.q_dim(), L.q), c.dim, L.q, false);
      add(column_n(kv, c.kv_dim(), L.k), c.dim, L.k, false);
      add(column_n(kv, c.kv_dim(), L.v), c.dim, L.v, false);
      add(c.dim, q.size(), L.o, false);  // o: row-parallel over the rank's heads
      if (L.gate == L.up) {
        add(ffn.size(), c.dim, L.gate, true);  // the fused gate/up pair
      } else {
        add(ffn.size(), c.dim, L.gate, false);  // two GEMMs (forward.cpp's ffn_block)
        add(ffn.size(), c.dim, L.up, false);
      }
      add(c.dim, ffn.size(), L.down, false);  // down: row-parallel
    }
    add(vocab.size(), c.dim, types.output, false);  // LM head
  }
  return keys;
}

std::vector<kernels::GemmKey> model_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                          kernels::DType weights) {
  return model_gemms(c, ranks, threads,
                     engine::uniform_matrix_types(c, std::string(kernels::dtype_name(weights))));
}

std::vector<kernels::GemmKey> lm_head_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                            const engine::MatrixTypes& types) {
  model_gemms(c, ranks, threads, types);  // the same checks
  std::vector<kernels::GemmKey> keys;
  for (int r = 0; r < ranks; ++r) {
    const IndexRange vocab = split(c.vocab_size, kernels::kPanel, r, ranks);
    const kernels::GemmKey key = key_of(vocab.size(), c.dim, types.output, threads, false);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

std::vector<kernels::GemmKey> lm_head_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                            kernels::DType weights) {
  return lm_head_gemms(c, ranks, threads,
                       engine::uniform_matrix_types(c, std::string(kernels::dtype_name(weights))));
}

}  // namespace sandwich::tuner
