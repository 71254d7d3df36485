// The NUMA placement plan of rank groups' weights, on the paper's machines (synthetic
// topologies): every rank's shard on its node, shards disjoint and covering, what all ranks read
// once per node, and the bytes each node holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/formats/model_config.h"
#include "kernels/gemm.h"
#include "paper_machines.h"
#include "runtime/rank_shards.h"
#include "runtime/weight_placement.h"

namespace sandwich::engine {
namespace {

using kernels::DType;

using test::rank_nodes;

// Llama-1.3b's attention with FFN and vocabulary sizes that 8 ranks split evenly in whole panels,
// so that every rank's shard has the same bytes.
ModelConfig even_model() {
  ModelConfig c;
  c.dim = 2048;
  c.n_layers = 3;
  c.n_heads = 16;
  c.n_kv_heads = 16;
  c.head_dim = 128;
  c.ffn_dim = 5632;
  c.vocab_size = 32768;
  c.max_seq_len = 2048;
  return c;
}

size_t bytes_of(const std::vector<WeightTensor>& tensors, WeightSplit split) {
  size_t b = 0;
  for (const WeightTensor& t : tensors)
    if (t.split == split) b += whole_bytes(t);
  return b;
}

// The checks every plan passes, for one configuration's ranks.
void expect_placed(const ModelConfig& c, const WeightPlacementPlan& plan,
                   const std::vector<int>& nodes, const std::string& what) {
  SCOPED_TRACE(what);
  const int R = static_cast<int>(nodes.size());
  const std::vector<WeightTensor> tensors = weight_tensors(c, DType::BF16);
  ASSERT_EQ(plan.nodes.size(), std::set<int>(nodes.begin(), nodes.end()).size());
  for (const NodeWeights& n : plan.nodes) {
    if (n.home) {
      EXPECT_TRUE(n.pieces.empty());
      continue;
    }
    // What all ranks read: once on every node.
    for (const WeightTensor& t : tensors) {
      const auto count = std::count_if(n.pieces.begin(), n.pieces.end(),
                                       [&](const WeightPiece& p) { return p.tensor == t.name; });
      if (t.split == WeightSplit::Replicated) {
        EXPECT_EQ(count, 1) << t.name;
      }
    }
  }
  for (const WeightTensor& t : tensors) {
    if (t.split == WeightSplit::Replicated) continue;
    const kernels::PackedWeight w = kernels::plan_packed_weight(t.n, t.k, DType::BF16);
    std::vector<IndexRange> ranges;
    for (int r = 0; r < R; ++r) {
      const WeightPiece p = rank_piece(t, rank_shards(c, tensors, r, R));
      const NodeWeights* n = plan.find(nodes[r]);
      ASSERT_NE(n, nullptr);
      // Each rank's shard lives on its node (the home node holds the whole model).
      if (!n->home) {
        EXPECT_NE(n->holding(p), nullptr) << t.name << " rank " << r;
      }
      if (t.split == WeightSplit::Columns) {
        EXPECT_EQ(p.range.begin % kernels::shard_granularity_n(w), 0) << t.name;
        EXPECT_EQ(p.bytes, static_cast<size_t>(p.range.size()) * t.k * 2) << t.name;
      } else {
        EXPECT_EQ(p.range.begin % kernels::shard_granularity_k(w), 0) << t.name;
        EXPECT_EQ(p.bytes, static_cast<size_t>(t.n) * p.range.size() * 2) << t.name;
      }
      ranges.push_back(p.range);
    }
    // Disjoint and covering, in rank order.
    const int64_t extent = t.split == WeightSplit::Columns ? t.n : t.k;
    EXPECT_EQ(ranges.front().begin, 0) << t.name;
    EXPECT_EQ(ranges.back().end, extent) << t.name;
    for (size_t i = 1; i < ranges.size(); ++i)
      EXPECT_EQ(ranges[i - 1].end, ranges[i].begin) << t.name;
  }
}

struct Case {
  std::string machine, config;
  int nodes;
};

TEST(WeightPlacement, ShardsOnTheirNodesOnThePapersMachines) {
  const ModelConfig c = even_model();
  const std::vector<WeightTensor> tensors = weight_tensors(c, DType::BF16);
  const size_t replicated = bytes_of(tensors, WeightSplit::Replicated);
  const size_t split =
      bytes_of(tensors, WeightSplit::Columns) + bytes_of(tensors, WeightSplit::KRange);
  const Case cases[] = {
      {"epyc7h12-2s", "2x128", 2},      {"epyc7h12-2s", "4x64", 2},
      {"xeon-gold-6230-2s", "2x40", 2}, {"xeon-gold-6230-2s", "4x20", 2},
      {"kunpeng920-4s", "2x96", 2},     {"kunpeng920-4s", "4x48", 4},
      {"kunpeng920-4s", "8x24", 8},
  };
  for (const Case& k : cases) {
    const std::vector<int> nodes = rank_nodes(k.machine, k.config);
    const WeightPlacementPlan plan = plan_weight_placement(c, DType::BF16, {nodes});
    const std::string what = k.machine + " " + k.config;
    ASSERT_EQ(static_cast<int>(plan.nodes.size()), k.nodes) << what;
    expect_placed(c, plan, nodes, what);
    const int R = static_cast<int>(nodes.size());
    for (const NodeWeights& n : plan.nodes) {
      const auto ranks = std::count(nodes.begin(), nodes.end(), n.node);
      // The home node holds the loaded model; the others what all read and their ranks' shards.
      const size_t want = n.home ? replicated + split : replicated + split / R * ranks;
      EXPECT_EQ(n.bytes, want) << what << " node " << n.node;
    }
    EXPECT_EQ(plan.home, nodes[0]) << what;  // ties go to the lowest node
  }
}

TEST(WeightPlacement, NoHomeCopiesForEveryNode) {
  const ModelConfig c = even_model();
  const std::vector<int> nodes = rank_nodes("kunpeng920-4s", "4x48");
  const WeightPlacementPlan plan = plan_weight_placement(c, DType::BF16, {nodes}, kNoHome);
  ASSERT_EQ(plan.nodes.size(), 4u);
  for (const NodeWeights& n : plan.nodes) EXPECT_FALSE(n.home);
  expect_placed(c, plan, nodes, "kunpeng 4x48, no home");
}

TEST(WeightPlacement, HomeIsTheNodeWithMostRanks) {
  const ModelConfig c = even_model();
  EXPECT_EQ(plan_weight_placement(c, DType::BF16, {{3, 1, 1, 3}, {1, 5}}).home, 1);
  EXPECT_EQ(plan_weight_placement(c, DType::BF16, {{2, 0}}).home, 0);
  EXPECT_EQ(plan_weight_placement(c, DType::BF16, {{2, 0}}, 2).home, 2);
}

// Prefill and decode on the same nodes: a rank whose columns a node already holds reads them
// there; columns that two configurations put on different nodes are held on both.
TEST(WeightPlacement, PrefillAndDecodeConfigurations) {
  const ModelConfig c = even_model();
  const std::vector<WeightTensor> tensors = weight_tensors(c, DType::BF16);
  const size_t replicated = bytes_of(tensors, WeightSplit::Replicated);
  const size_t split =
      bytes_of(tensors, WeightSplit::Columns) + bytes_of(tensors, WeightSplit::KRange);
  const std::vector<int> two = rank_nodes("epyc7h12-2s", "2x128");
  const std::vector<int> two_small = rank_nodes("epyc7h12-2s", "2x16");  // fewer cores, node 0
  const std::vector<int> four = rank_nodes("epyc7h12-2s", "4x64");
  ASSERT_EQ(two, (std::vector<int>{0, 1}));
  ASSERT_EQ(four, (std::vector<int>{0, 0, 1, 1}));
  ASSERT_EQ(two_small, (std::vector<int>{0, 0}));

  const WeightPlacementPlan alike = plan_weight_placement(c, DType::BF16, {two, two});
  ASSERT_EQ(alike.nodes.size(), 2u);
  EXPECT_EQ(alike.nodes[1].bytes, replicated + split / 2);

  // 4 ranks for prefill, 2 for decode: ranks 2-3 of 4 and rank 1 of 2 read the same half, in
  // either order.
  for (const auto& configs : {std::vector{four, two}, std::vector{two, four}}) {
    const WeightPlacementPlan p = plan_weight_placement(c, DType::BF16, configs);
    expect_placed(c, p, four, "4x64 with 2x128");
    expect_placed(c, p, two, "2x128 with 4x64");
    ASSERT_EQ(p.home, 0);
    EXPECT_EQ(p.find(1)->bytes, replicated + split / 2);
  }

  // Rank 1 of 4 on node 1 too: node 1 (not the home, given) holds three quarters, in a piece
  // per configuration.
  const std::vector<int> three_on_1 = {0, 1, 1, 1};
  const WeightPlacementPlan p = plan_weight_placement(c, DType::BF16, {two, three_on_1}, 0);
  expect_placed(c, p, three_on_1, "0,1,1,1 after 0,1");
  EXPECT_EQ(p.find(1)->bytes, replicated + split / 4 * 3);

  // Swapped nodes: node 1 holds the columns of both ranks, the cost of disagreeing.
  const WeightPlacementPlan swapped = plan_weight_placement(c, DType::BF16, {two, {1, 0}});
  expect_placed(c, swapped, {1, 0}, "swapped");
  EXPECT_EQ(swapped.find(1)->bytes, replicated + split);

  // Both on one node: nothing is copied.
  const WeightPlacementPlan one = plan_weight_placement(c, DType::BF16, {two_small, {0}});
  ASSERT_EQ(one.nodes.size(), 1u);
  EXPECT_TRUE(one.nodes[0].home);
}

TEST(WeightPlacement, TiedEmbeddingIsReadByAllRanks) {
  ModelConfig c = even_model();
  c.tied_embeddings = true;
  const WeightPlacementPlan plan = plan_weight_placement(c, DType::F32, {{0, 1}});
  const NodeWeights* n = plan.find(1);
  ASSERT_NE(n, nullptr);
  for (const WeightPiece& p : n->pieces) EXPECT_NE(p.tensor, "output.weight");
  const auto embedding = std::find_if(n->pieces.begin(), n->pieces.end(), [](const auto& p) {
    return p.tensor == "token_embd.weight";
  });
  ASSERT_NE(embedding, n->pieces.end());
  EXPECT_EQ(embedding->split, WeightSplit::Replicated);
  EXPECT_EQ(embedding->bytes, size_t{32768} * 2048 * 4);
}

TEST(WeightPlacement, RanksThatCannotSplitTheModel) {
  EXPECT_THROW(plan_weight_placement(even_model(), DType::BF16, {{0, 0, 1}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::engine
