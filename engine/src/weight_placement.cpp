#include "weight_placement.h"

#include <algorithm>
#include <map>

#include "kernels/gemm.h"
#include "rank_shards.h"

namespace sandwich {
namespace {

std::string layer_tensor(int layer, const char* what) {
  return "blk." + std::to_string(layer) + "." + what + ".weight";
}

}  // namespace

std::vector<WeightTensor> weight_tensors(const ModelConfig& c) {
  using S = WeightSplit;
  using B = ShardRange;
  std::vector<WeightTensor> t;
  // A tied output head is the embedding: every rank reads all of it for the lookup.
  t.push_back({"token_embd.weight", c.vocab_size, c.dim, S::Replicated, B::None});
  if (!c.tied_embeddings) t.push_back({"output.weight", c.vocab_size, c.dim, S::Columns, B::Vocab});
  t.push_back({"output_norm.weight", c.dim, 0, S::Replicated, B::None});
  for (int l = 0; l < c.n_layers; ++l) {
    t.push_back({layer_tensor(l, "attn_norm"), c.dim, 0, S::Replicated, B::None});
    t.push_back({layer_tensor(l, "attn_q"), c.q_dim(), c.dim, S::Columns, B::Q});
    t.push_back({layer_tensor(l, "attn_k"), c.kv_dim(), c.dim, S::Columns, B::KV});
    t.push_back({layer_tensor(l, "attn_v"), c.kv_dim(), c.dim, S::Columns, B::KV});
    t.push_back({layer_tensor(l, "attn_output"), c.dim, c.q_dim(), S::KRange, B::Q});
    t.push_back({layer_tensor(l, "ffn_norm"), c.dim, 0, S::Replicated, B::None});
    t.push_back({layer_tensor(l, "ffn_gate"), c.ffn_dim, c.dim, S::Columns, B::FFN});
    t.push_back({layer_tensor(l, "ffn_up"), c.ffn_dim, c.dim, S::Columns, B::FFN});
    t.push_back({layer_tensor(l, "ffn_down"), c.dim, c.ffn_dim, S::KRange, B::FFN});
  }
  return t;
}

size_t whole_bytes(const WeightTensor& t, kernels::DType storage) {
  if (t.k == 0) return static_cast<size_t>(t.n) * sizeof(float);
  return kernels::plan_packed_weight(t.n, t.k, storage).bytes;
}

WeightPiece range_piece(const WeightTensor& t, IndexRange range, kernels::DType storage) {
  WeightPiece p{t.name, t.split, range, 0};
  if (t.split == WeightSplit::Replicated) {
    p.range = {0, t.n};
    p.bytes = whole_bytes(t, storage);
  } else if (t.split == WeightSplit::Columns) {
    const kernels::PackedWeight whole = kernels::plan_packed_weight(t.n, t.k, storage);
    const int64_t panels = (range.size() + whole.panel - 1) / whole.panel;
    p.bytes = static_cast<size_t>(panels) * whole.panel_bytes();
  } else {
    p.bytes = kernels::plan_packed_weight(t.n, range.size(), storage).bytes;
  }
  return p;
}

WeightPiece rank_piece(const WeightTensor& t, const ModelConfig& c, kernels::DType storage,
                       int rank, int n_ranks) {
  if (t.split == WeightSplit::Replicated) return range_piece(t, {0, t.n}, storage);
  const RankShards s = rank_shards(c, rank, n_ranks);
  const IndexRange mine = t.by == ShardRange::Q     ? s.q_cols
                          : t.by == ShardRange::KV  ? s.kv_cols
                          : t.by == ShardRange::FFN ? s.ffn_cols
                                                    : s.vocab_cols;
  return range_piece(t, t.split == WeightSplit::Columns ? panel_cover(mine, t.n) : mine, storage);
}

const WeightPiece* NodeWeights::holding(const WeightPiece& p) const {
  for (const WeightPiece& q : pieces)
    if (q.tensor == p.tensor && q.range.begin <= p.range.begin && p.range.end <= q.range.end)
      return &q;
  return nullptr;
}

const NodeWeights* WeightPlacementPlan::find(int node) const {
  for (const NodeWeights& n : nodes)
    if (n.node == node) return &n;
  return nullptr;
}

WeightPlacementPlan plan_weight_placement(const ModelConfig& c, kernels::DType storage,
                                          const std::vector<std::vector<int>>& rank_nodes,
                                          int home) {
  std::map<int, int> ranks_on;  // node -> ranks over all configurations
  for (const auto& config : rank_nodes)
    for (int node : config) ++ranks_on[node];
  WeightPlacementPlan plan;
  if (ranks_on.empty()) return plan;
  if (home == kAutoHome) {
    home = ranks_on.begin()->first;
    for (auto [node, n] : ranks_on)
      if (n > ranks_on[home]) home = node;
  }
  plan.home = home;
  const std::vector<WeightTensor> tensors = weight_tensors(c);
  for (auto [node, n] : ranks_on) {
    NodeWeights w;
    w.node = node;
    w.home = node == home;
    if (w.home) {
      for (const WeightTensor& t : tensors) w.bytes += whole_bytes(t, storage);
      plan.nodes.push_back(std::move(w));
      continue;
    }
    // Replicated tensors once, then configuration by configuration the ranges of its ranks here
    // that no piece holds yet, merged where they meet.
    for (const WeightTensor& t : tensors)
      if (t.split == WeightSplit::Replicated) w.pieces.push_back(rank_piece(t, c, storage, 0, 1));
    for (const auto& config : rank_nodes) {
      const int R = static_cast<int>(config.size());
      for (const WeightTensor& t : tensors) {
        if (t.split == WeightSplit::Replicated) continue;
        std::vector<IndexRange> need;
        for (int r = 0; r < R; ++r) {
          if (config[r] != node) continue;
          const WeightPiece p = rank_piece(t, c, storage, r, R);
          if (!w.holding(p)) need.push_back(p.range);
        }
        std::sort(need.begin(), need.end(),
                  [](IndexRange a, IndexRange b) { return a.begin < b.begin; });
        std::vector<IndexRange> merged;
        for (IndexRange r : need) {
          if (!merged.empty() && r.begin <= merged.back().end)
            merged.back().end = std::max(merged.back().end, r.end);
          else
            merged.push_back(r);
        }
        for (IndexRange r : merged) w.pieces.push_back(range_piece(t, r, storage));
      }
    }
    for (const WeightPiece& p : w.pieces) w.bytes += p.bytes;
    plan.nodes.push_back(std::move(w));
  }
  return plan;
}

}  // namespace sandwich
