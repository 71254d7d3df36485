// The NUMA placement plan of quantized models (Q4_K_M's mix of q4_k, q6_k and f32 tensors, and
// Q8_0) on the paper's machines: column shards on whole 16-row panels and K shards on whole
// blocks, each on its rank's node, disjoint and covering, what all ranks read once per node, and
// the bytes each node holds counted as packed.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "engine/formats/model_config.h"
#include "kernels/gemm.h"
#include "paper_machines.h"
#include "quant_storage.h"
#include "runtime/rank_shards.h"
#include "runtime/weight_placement.h"

namespace sandwich::engine {
namespace {

using kernels::QType;
using test::preset_storage;
using test::rank_nodes;

// Llama-1.3b's attention with 8 KV heads and an FFN of 22 super-blocks: 2, 4 and 8 ranks split
// every matrix on whole 256-value blocks, the FFN unevenly (2 or 3 blocks a rank of 8).
ModelConfig small_model() {
  ModelConfig c;
  c.dim = 2048;
  c.n_layers = 3;
  c.n_heads = 16;
  c.n_kv_heads = 8;
  c.head_dim = 128;
  c.ffn_dim = 5632;
  c.vocab_size = 32000;
  c.max_seq_len = 2048;
  return c;
}

// A rank's piece's bytes from the public layout alone: whole panels of its columns, each the
// bytes of a one-panel matrix of the tensor's type, or its K range of every row.
size_t expected_bytes(const WeightTensor& t, IndexRange range) {
  const kernels::PackedWeight& w = t.layout;
  auto layout = [&](int64_t n, int64_t k) {
    return w.qtype ? kernels::plan_packed_weight_quant(n, k, *w.qtype)
                   : kernels::plan_packed_weight(n, k, w.dtype);
  };
  if (t.split == WeightSplit::Columns) {
    const int64_t panels = (range.size() + w.panel - 1) / w.panel;
    return static_cast<size_t>(panels) * layout(w.panel, t.k).bytes;
  }
  return layout(t.n, range.size()).bytes;
}

size_t replicated_bytes(const std::vector<WeightTensor>& tensors) {
  size_t b = 0;
  for (const WeightTensor& t : tensors)
    if (t.split == WeightSplit::Replicated) b += whole_bytes(t);
  return b;
}

// Every check of one configuration's ranks under a plan, and each node's exact bytes when the
// plan is of this configuration alone.
void expect_placed(const ModelConfig& c, const WeightStorage& storage,
                   const WeightPlacementPlan& plan, const std::vector<int>& nodes,
                   const std::string& what, bool alone = true) {
  SCOPED_TRACE(what);
  const int R = static_cast<int>(nodes.size());
  const std::vector<WeightTensor> tensors = weight_tensors(c, storage);
  std::vector<RankShards> shards;
  for (int r = 0; r < R; ++r) shards.push_back(rank_shards(c, tensors, r, R));
  std::map<int, size_t> want;  // node -> bytes of its ranks' shards
  size_t whole = 0;
  for (const WeightTensor& t : tensors) {
    whole += whole_bytes(t);
    if (t.split == WeightSplit::Replicated) continue;
    const bool columns = t.split == WeightSplit::Columns;
    const int64_t extent = columns ? t.n : t.k;
    // Columns: whole panels (16 rows when quantized); K: whole blocks (32 or 256 values).
    const int64_t g =
        columns ? kernels::shard_granularity_n(t.layout) : kernels::shard_granularity_k(t.layout);
    if (t.layout.qtype) {
      EXPECT_EQ(g, columns ? 16 : kernels::qtype_info(*t.layout.qtype).block_elems);
    }
    std::vector<IndexRange> ranges;
    for (int r = 0; r < R; ++r) {
      const WeightPiece p = rank_piece(t, shards[r]);
      EXPECT_EQ(p.range.begin % g, 0) << t.name << " rank " << r;
      EXPECT_TRUE(p.range.end % g == 0 || p.range.end == extent) << t.name << " rank " << r;
      EXPECT_EQ(p.bytes, expected_bytes(t, p.range)) << t.name << " rank " << r;
      const NodeWeights* n = plan.find(nodes[r]);
      ASSERT_NE(n, nullptr);
      if (!n->home) {
        EXPECT_NE(n->holding(p), nullptr) << t.name << " rank " << r;
      }
      want[nodes[r]] += p.bytes;
      ranges.push_back(p.range);
    }
    // Disjoint and covering, in rank order.
    EXPECT_EQ(ranges.front().begin, 0) << t.name;
    EXPECT_EQ(ranges.back().end, extent) << t.name;
    for (size_t i = 1; i < ranges.size(); ++i)
      EXPECT_EQ(ranges[i - 1].end, ranges[i].begin) << t.name;
  }
  for (const NodeWeights& n : plan.nodes) {
    if (n.home) {
      EXPECT_TRUE(n.pieces.empty());
      EXPECT_EQ(n.bytes, whole) << "home node " << n.node;
      continue;
    }
    for (const WeightTensor& t : tensors) {
      if (t.split == WeightSplit::Replicated) {
        EXPECT_EQ(std::count_if(n.pieces.begin(), n.pieces.end(),
                                [&](const WeightPiece& p) { return p.tensor == t.name; }),
                  1)
            << t.name;
      }
    }
    if (alone) {
      EXPECT_EQ(n.bytes, replicated_bytes(tensors) + want[n.node]) << "node " << n.node;
    }
  }
}

struct Case {
  std::string machine, config;
  int nodes;
};

const Case kCases[] = {
    {"epyc7h12-2s", "2x128", 2},  {"epyc7h12-2s", "4x64", 2},   {"xeon-gold-6230-2s", "2x40", 2},
    {"kunpeng920-4s", "2x96", 2}, {"kunpeng920-4s", "4x48", 4}, {"kunpeng920-4s", "8x24", 8},
};

TEST(QuantWeightPlacement, ShardsOnWholePanelsAndBlocksOnThePapersMachines) {
  const ModelConfig c = small_model();
  for (const std::string preset : {"q4_k_m", "q8_0"}) {
    const WeightStorage storage = preset_storage(c, preset);
    for (const Case& k : kCases) {
      const std::vector<int> nodes = rank_nodes(k.machine, k.config);
      const std::string what = preset + " on " + k.machine + " " + k.config;
      const WeightPlacementPlan plan = plan_weight_placement(c, storage, {nodes});
      ASSERT_EQ(static_cast<int>(plan.nodes.size()), k.nodes) << what;
      expect_placed(c, storage, plan, nodes, what);
      // Every node a copy: the same checks.
      expect_placed(c, storage, plan_weight_placement(c, storage, {nodes}, kNoHome), nodes,
                    what + ", no home");
    }
  }
}

// Q4_K_M mixes block types by tensor: its q6_k matrices (the output head, attn_v and ffn_down of
// the last layer here) are cut and counted as q6_k, its q4_k ones as q4_k, its norms as f32.
TEST(QuantWeightPlacement, MixedTypesAreEachCountedAsPacked) {
  const ModelConfig c = small_model();
  const WeightStorage storage = preset_storage(c, "q4_k_m");
  EXPECT_EQ(storage.quantized.at("token_embd.weight"), QType::Q4_K);
  EXPECT_EQ(storage.quantized.at("output.weight"), QType::Q6_K);
  EXPECT_EQ(storage.quantized.at("blk.0.ffn_down.weight"), QType::Q4_K);
  EXPECT_EQ(storage.quantized.at("blk.2.ffn_down.weight"), QType::Q6_K);
  EXPECT_EQ(storage.quantized.at("blk.2.attn_v.weight"), QType::Q6_K);
  EXPECT_EQ(storage.quantized.count("blk.0.attn_norm.weight"), 0u);
  const WeightPlacementPlan plan = plan_weight_placement(c, storage, {{0, 1}});
  const NodeWeights& n1 = *plan.find(1);
  auto piece = [&](const std::string& name) {
    for (const WeightPiece& p : n1.pieces)
      if (p.tensor == name) return p;
    ADD_FAILURE() << "no piece of " << name;
    return WeightPiece{};
  };
  // Rank 1 of 2: FFN columns [2816, 5632) (11 super-blocks), vocabulary rows [16000, 32000).
  EXPECT_EQ(piece("blk.2.ffn_down.weight").range, (IndexRange{2816, 5632}));
  EXPECT_EQ(piece("blk.2.ffn_down.weight").bytes,
            kernels::plan_packed_weight_quant(2048, 2816, QType::Q6_K).bytes);
  EXPECT_EQ(piece("blk.0.ffn_down.weight").bytes,
            kernels::plan_packed_weight_quant(2048, 2816, QType::Q4_K).bytes);
  EXPECT_EQ(piece("output.weight").range, (IndexRange{16000, 32000}));
  EXPECT_EQ(piece("output.weight").bytes,
            kernels::plan_packed_weight_quant(16000, 2048, QType::Q6_K).bytes);
  EXPECT_EQ(piece("blk.1.ffn_norm.weight").bytes, 2048u * 4);
  EXPECT_EQ(piece("token_embd.weight").bytes,
            kernels::plan_packed_weight_quant(32000, 2048, QType::Q4_K).bytes);
}

// Q8_0's panel-blocks are 16 rows of ggml's 34-byte blocks and these panels whole cache lines,
// so the packed bytes are the file's: 34 bytes per 32 weights, 4 per norm value.
TEST(QuantWeightPlacement, Q8_0BytesAreTheFilesBytes) {
  const ModelConfig c = small_model();
  const WeightStorage storage = preset_storage(c, "q8_0");
  size_t file = 0;
  for (const WeightTensor& t : weight_tensors(c, storage))
    file += t.k ? static_cast<size_t>(t.n * t.k / 32 * 34) : static_cast<size_t>(t.n) * 4;
  const WeightPlacementPlan plan = plan_weight_placement(c, storage, {{0, 1}});
  EXPECT_EQ(plan.find(0)->bytes, file);
  const size_t replicated = replicated_bytes(weight_tensors(c, storage));
  EXPECT_EQ(plan.find(1)->bytes, replicated + (file - replicated) / 2);
}

// Prefill on 4 ranks, decode on 2, on the same two nodes: ranks 2-3 of 4 read inside rank 1 of
// 2's blocks (the FFN's 22 super-blocks split 5 + 6 | 5 + 6 and 11 | 11), so node 1 holds one half.
TEST(QuantWeightPlacement, PrefillAndDecodeShareNestedShards) {
  const ModelConfig c = small_model();
  const WeightStorage storage = preset_storage(c, "q4_k_m");
  const std::vector<int> two = rank_nodes("epyc7h12-2s", "2x128");
  const std::vector<int> four = rank_nodes("epyc7h12-2s", "4x64");
  const size_t half = plan_weight_placement(c, storage, {two}).find(1)->bytes;
  for (const auto& configs : {std::vector{four, two}, std::vector{two, four}}) {
    const WeightPlacementPlan p = plan_weight_placement(c, storage, configs);
    expect_placed(c, storage, p, four, "4x64 with 2x128", false);
    expect_placed(c, storage, p, two, "2x128 with 4x64", false);
    EXPECT_EQ(p.find(1)->bytes, half);
  }
}

// A split that would cut a block (4 heads of 64 over 2 ranks: K shards of half a super-block)
// cannot be planned.
TEST(QuantWeightPlacement, ASplitThatCutsABlockIsRefused) {
  ModelConfig c = small_model();
  c.dim = 256;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  EXPECT_THROW(plan_weight_placement(c, preset_storage(c, "q4_k_m"), {{0, 1}}),
               std::invalid_argument);
  EXPECT_NO_THROW(plan_weight_placement(c, preset_storage(c, "q8_0"), {{0, 1}}));
}

std::string gb(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

// The real models' Q4_K_M on 2, 4 and 8 nodes, printed for the record: the home node holds the
// loaded model, every other what all ranks read and its rank's shards. Llama-1.3b's FFN rows
// (5504) are no whole number of super-blocks: its ffn_down falls back to q5_0/q8_0 blocks of 32.
TEST(QuantWeightPlacement, RealModelsOnTwoFourAndEightNodes) {
  for (const std::string model : {"llama-1.3b", "llama3-8b"}) {
    const ModelConfig c = load_preset(model);
    const WeightStorage storage = preset_storage(c, "q4_k_m");
    const std::vector<WeightTensor> tensors = weight_tensors(c, storage);
    const size_t replicated = replicated_bytes(tensors);
    for (const Case& k : {Case{"epyc7h12-2s", "2x128", 2}, Case{"kunpeng920-4s", "4x48", 4},
                          Case{"kunpeng920-4s", "8x24", 8}}) {
      const std::vector<int> nodes = rank_nodes(k.machine, k.config);
      const std::string what = model + " Q4_K_M on " + k.machine + " " + k.config;
      const WeightPlacementPlan plan = plan_weight_placement(c, storage, {nodes});
      expect_placed(c, storage, plan, nodes, what);
      std::string line = what + ": what all ranks read " + gb(replicated) + ";";
      size_t total = 0;
      for (const NodeWeights& n : plan.nodes) {
        line += " node " + std::to_string(n.node) + " " + gb(n.bytes) + (n.home ? " (home)" : "");
        total += n.bytes;
      }
      std::printf("%s; all nodes %s\n", line.c_str(), gb(total).c_str());
    }
  }
}

}  // namespace
}  // namespace sandwich::engine
