#include "runtime/weight_placement.h"

#include <algorithm>
#include <map>

#include "kernels/panel_slices.h"

namespace sandwich::engine {
namespace {

std::string layer_tensor(int layer, const char* what) {
  return "blk." + std::to_string(layer) + "." + what + ".weight";
}

const WeightTensor& find_tensor(const std::vector<WeightTensor>& tensors, const std::string& name) {
  for (const WeightTensor& t : tensors)
    if (t.name == name) return t;
  throw std::logic_error("no weight tensor " + name);
}

}  // namespace

kernels::PackedWeight WeightStorage::layout(const std::string& name, int64_t n, int64_t k) const {
  const auto q = quantized.find(name);
  return q == quantized.end() ? kernels::plan_packed_weight(n, k, dtype)
                              : kernels::plan_packed_weight_quant(n, k, q->second);
}

std::vector<WeightTensor> weight_tensors(const ModelConfig& c, const WeightStorage& storage) {
  using S = WeightSplit;
  using B = ShardRange;
  const LayerRange held = resolve_layers(storage.layers, c.n_layers);
  const bool first = held.begin == 0, last = held.end == c.n_layers;
  std::vector<WeightTensor> t;
  auto matrix = [&](std::string name, int64_t n, int64_t k, S split, B by) {
    kernels::PackedWeight layout = storage.layout(name, n, k);
    t.push_back({std::move(name), n, k, split, by, layout});
  };
  auto vector = [&](std::string name, int64_t n) {
    t.push_back({std::move(name), n, 0, S::Replicated, B::None, {}});
  };
  // A tied output head is the embedding: every rank reads all of it for the lookup (a last stage
  // without layer 0 holds it as its head alone).
  if (first || (last && c.tied_embeddings))
    matrix("token_embd.weight", c.vocab_size, c.dim, S::Replicated, B::None);
  if (last && !c.tied_embeddings)
    matrix("output.weight", c.vocab_size, c.dim, S::Columns, B::Vocab);
  if (last) vector("output_norm.weight", c.dim);
  for (int l = held.begin; l < held.end; ++l) {
    vector(layer_tensor(l, "attn_norm"), c.dim);
    matrix(layer_tensor(l, "attn_q"), c.q_dim(), c.dim, S::Columns, B::Q);
    matrix(layer_tensor(l, "attn_k"), c.kv_dim(), c.dim, S::Columns, B::KV);
    matrix(layer_tensor(l, "attn_v"), c.kv_dim(), c.dim, S::Columns, B::KV);
    matrix(layer_tensor(l, "attn_output"), c.dim, c.q_dim(), S::KRange, B::Q);
    vector(layer_tensor(l, "ffn_norm"), c.dim);
    matrix(layer_tensor(l, "ffn_gate"), c.ffn_dim, c.dim, S::Columns, B::FFN);
    matrix(layer_tensor(l, "ffn_up"), c.ffn_dim, c.dim, S::Columns, B::FFN);
    matrix(layer_tensor(l, "ffn_down"), c.dim, c.ffn_dim, S::KRange, B::FFN);
  }
  return t;
}

RankShards rank_shards(const ModelConfig& c, const std::vector<WeightTensor>& tensors, int rank,
                       int n_ranks) {
  // Over the layers the tensors hold (a pipeline stage's).
  int64_t ffn_g = kernels::kPanel;
  for (const WeightTensor& t : tensors) {
    const std::string suffix = ".ffn_gate.weight";
    if (t.name.size() <= suffix.size() ||
        t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string layer = t.name.substr(0, t.name.size() - suffix.size());  // "blk.N"
    ffn_g = std::max(
        ffn_g, ffn_granularity(t.layout, find_tensor(tensors, layer + ".ffn_up.weight").layout,
                               find_tensor(tensors, layer + ".ffn_down.weight").layout));
  }
  return rank_shards(c, rank, n_ranks, ffn_g);
}

size_t whole_bytes(const WeightTensor& t) {
  if (t.k == 0) return static_cast<size_t>(t.n) * sizeof(float);
  return t.layout.bytes;
}

WeightPiece range_piece(const WeightTensor& t, IndexRange range) {
  WeightPiece p{t.name, t.split, range, 0};
  if (t.split == WeightSplit::Replicated) {
    p.range = {0, t.n};
    p.bytes = whole_bytes(t);
  } else if (t.split == WeightSplit::Columns) {
    const int64_t panels = (range.size() + t.layout.panel - 1) / t.layout.panel;
    p.bytes = static_cast<size_t>(panels) * t.layout.panel_bytes();
  } else {
    // Every panel's K range, as a matrix of its own (throws where it would cut a block).
    p.bytes = kernels::plan_packed_like(t.layout, t.n, range.size()).bytes;
  }
  return p;
}

WeightPiece rank_piece(const WeightTensor& t, const RankShards& s) {
  if (t.split == WeightSplit::Replicated) return range_piece(t, {0, t.n});
  const IndexRange mine = t.by == ShardRange::Q     ? s.q_cols
                          : t.by == ShardRange::KV  ? s.kv_cols
                          : t.by == ShardRange::FFN ? s.ffn_cols
                                                    : s.vocab_cols;
  return range_piece(
      t, t.split == WeightSplit::Columns ? panel_cover(mine, t.n, t.layout.panel) : mine);
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

WeightPlacementPlan plan_weight_placement(const ModelConfig& c, const WeightStorage& storage,
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
  const std::vector<WeightTensor> tensors = weight_tensors(c, storage);
  // Each configuration's ranges, once (they also check that it splits the model).
  std::vector<std::vector<RankShards>> shards;
  for (const auto& config : rank_nodes) {
    const int R = static_cast<int>(config.size());
    shards.emplace_back();
    for (int r = 0; r < R; ++r) shards.back().push_back(rank_shards(c, tensors, r, R));
  }
  for (auto [node, n] : ranks_on) {
    NodeWeights w;
    w.node = node;
    w.home = node == home;
    if (w.home) {
      for (const WeightTensor& t : tensors) w.bytes += whole_bytes(t);
      plan.nodes.push_back(std::move(w));
      continue;
    }
    // Replicated tensors once, then configuration by configuration the ranges of its ranks here
    // that no piece holds yet, merged where they meet.
    for (const WeightTensor& t : tensors)
      if (t.split == WeightSplit::Replicated) w.pieces.push_back(range_piece(t, {0, t.n}));
    for (size_t ci = 0; ci < rank_nodes.size(); ++ci) {
      const std::vector<int>& config = rank_nodes[ci];
      for (const WeightTensor& t : tensors) {
        if (t.split == WeightSplit::Replicated) continue;
        std::vector<IndexRange> need;
        for (size_t r = 0; r < config.size(); ++r) {
          if (config[r] != node) continue;
          const WeightPiece p = rank_piece(t, shards[ci][r]);
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
        for (IndexRange r : merged) w.pieces.push_back(range_piece(t, r));
      }
    }
    for (const WeightPiece& p : w.pieces) w.bytes += p.bytes;
    plan.nodes.push_back(std::move(w));
  }
  return plan;
}

}  // namespace sandwich::engine
