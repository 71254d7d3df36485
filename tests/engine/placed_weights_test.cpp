// Rank groups' weights on their NUMA nodes, on this machine: the memory policy of the shard pages
// after a 2-rank executor starts, and ranks reading node copies computing what the loaded
// weights compute.
#include <linux/mempolicy.h>

#include <thread>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/executor.h"
#include "engine/kv_cache.h"
#include "forward.h"
#include "kernels/gemm.h"
#include "numa_memory.h"
#include "placed_weights.h"
#include "test_data.h"
#include "thread_collective.h"
#include "topotree/service_config.h"

namespace sandwich {
namespace {

using test::TempDir;

// Head size 18 (head shards off the 64-column panels), odd FFN and vocabulary sizes.
std::unique_ptr<Model> small_model(const TempDir& dir, WeightDType dtype, int kv_heads, bool tied) {
  test::write_llama_config(dir.path(), {72, 2, 4, kv_heads, 197, 301, 64},
                           {{"rms_norm_eps", 1e-5}, {"tie_word_embeddings", tied}});
  LoadOptions o = test::dummy_weights(dir.path(), dtype);
  o.seed = 5;
  o.threads = 2;
  return load_model(o);
}

// The first byte rank `rank` of `n_ranks` reads of a tensor, in the weights it was given.
const void* shard_start(const Model& m, const ModelWeights& w, const std::string& tensor, int rank,
                        int n_ranks) {
  const ModelConfig& c = m.config;
  for (const WeightTensor& t : weight_tensors(c)) {
    if (t.name != tensor) continue;
    const WeightPiece p = rank_piece(t, c, w.dtype, rank, n_ranks);
    const kernels::PackedWeight& pw = tensor == "blk.0.ffn_gate.weight"   ? w.layers[0].w_gate
                                      : tensor == "blk.0.ffn_down.weight" ? w.layers[0].w_down
                                                                          : w.embedding;
    const auto* base = static_cast<const uint8_t*>(pw.data);
    if (&w != &m.weights()) return base;  // a copy holds the shard alone
    if (p.split == WeightSplit::Columns) return base + p.range.begin / pw.panel * pw.panel_bytes();
    if (p.split == WeightSplit::KRange)
      return base + p.range.begin * pw.panel * kernels::dtype_size(pw.dtype);
    return base;
  }
  ADD_FAILURE() << "no tensor " << tensor;
  return nullptr;
}

void expect_bound_to_node0(const void* p, const std::string& what) {
  const PagePolicy policy = page_policy(p);
  EXPECT_EQ(policy.mode, MPOL_BIND) << what;
  EXPECT_EQ(policy.nodes, 1u) << what;
  EXPECT_EQ(page_node(p), 0) << what;
}

const char* const kTensors[] = {"token_embd.weight", "blk.0.ffn_gate.weight",
                                "blk.0.ffn_down.weight"};

// A 2-rank group on this one-node machine: the loaded weights are bound to node 0 in place, so
// the ranks read every shard there and nothing is copied.
TEST(PlacedWeights, TwoRankGroupBindsTheLoadedWeightsToItsNode) {
  TempDir dir;
  auto m = small_model(dir, WeightDType::BF16, 2, false);
  EXPECT_EQ(page_policy(m->region().data()).mode, MPOL_DEFAULT);
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  auto ex = make_executor(*m, kv, topo::parse_service_config("2x1"), {});
  const WeightPlacementPlan plan = m->placed_weights().plan();
  ASSERT_EQ(plan.nodes.size(), 1u);
  EXPECT_TRUE(plan.nodes[0].home);
  EXPECT_EQ(plan.nodes[0].node, 0);
  for (const char* t : kTensors)
    for (int r = 0; r < 2; ++r)
      expect_bound_to_node0(shard_start(*m, m->weights(), t, r, 2),
                            std::string(t) + " rank " + std::to_string(r));
}

// The copies a node without the loaded weights gets (forced here with kNoHome): bound to their
// node and apart from the loaded region, one copy per node of what all ranks read.
TEST(PlacedWeights, NodeCopiesAreBoundToTheirNode) {
  TempDir dir;
  auto m = small_model(dir, WeightDType::BF16, 2, false);
  const std::vector<const ModelWeights*> views = m->placed_weights().place(*m, {0, 0}, kNoHome);
  ASSERT_EQ(views.size(), 2u);
  const uint8_t* region = m->region().data();
  for (int r = 0; r < 2; ++r) {
    ASSERT_NE(views[r], &m->weights());
    for (const char* t : kTensors) {
      const auto* p = static_cast<const uint8_t*>(shard_start(*m, *views[r], t, r, 2));
      EXPECT_TRUE(p < region || p >= region + m->region().size()) << t;
      expect_bound_to_node0(p, std::string(t) + " copy for rank " + std::to_string(r));
    }
  }
  EXPECT_EQ(views[0]->embedding.data, views[1]->embedding.data);
}

// Logits of `views.size()` ranks as threads, reading the given weights (or the loaded ones).
std::vector<float> run_ranks(const Model& m, const std::vector<const ModelWeights*>& views) {
  const int V = m.config.vocab_size, R = static_cast<int>(views.size());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 13; ++i) prompt.push_back((i * 37 + 5) % V);
  KVCache kv(m.config, KVCache::bytes_for_tokens(m.config, 32));
  std::vector<int32_t> blocks;
  EXPECT_TRUE(kv.reserve(blocks, 32));
  test::Exchange exchange(R);
  std::vector<std::vector<float>> got(R, std::vector<float>(V));
  std::vector<std::thread> ranks;
  for (int r = 0; r < R; ++r)
    ranks.emplace_back([&, r] {
      kernels::ThreadTeam team(1);
      test::ThreadCollective coll(exchange, r);
      // Batch-invariant GEMMs sum in K order whatever the blocking: a shard held alone sums as
      // the same columns of the whole matrix do.
      ForwardPass fp(m, kv, team, RankView{r, R}, &coll, true, views[r]);
      BatchEntry e{prompt, 0, blocks, true};
      fp.run({&e, 1}, got[r].data());
    });
  for (auto& t : ranks) t.join();
  for (int r = 1; r < R; ++r) EXPECT_EQ(got[r], got[0]);
  return got[0];
}

// Ranks reading their shards from node copies compute bitwise what they compute from the loaded
// weights: 2 ranks on (pretend) nodes 0 and 1, then 4 ranks on 0, 1, 1, 1, whose ranks 2 and 3
// read inside the piece of rank 1 of 2.
void expect_copies_compute_the_same(WeightDType dtype, bool tied) {
  TempDir dir;
  auto m = small_model(dir, dtype, 4, tied);
  PlacedWeights& placed = m->placed_weights();
  const auto two = placed.place(*m, {0, 1}, kNoHome, false);
  const auto four = placed.place(*m, {0, 1, 1, 1}, kNoHome, false);
  for (const ModelWeights* w : four) ASSERT_NE(w, &m->weights());
  const kernels::PackedWeight& down = m->weights().layers[0].w_down;
  EXPECT_LT(two[1]->layers[0].w_down.k, down.k);
  EXPECT_EQ(four[2]->layers[0].w_down.data, two[1]->layers[0].w_down.data);
  EXPECT_EQ(four[3]->layers[0].w_down.k, two[1]->layers[0].w_down.k);
  EXPECT_NE(four[1]->layers[0].w_down.data, four[0]->layers[0].w_down.data);
  EXPECT_EQ(run_ranks(*m, two), run_ranks(*m, {nullptr, nullptr}));
  EXPECT_EQ(run_ranks(*m, four), run_ranks(*m, {nullptr, nullptr, nullptr, nullptr}));
}

TEST(PlacedWeights, NodeCopiesComputeWhatTheLoadedWeightsDo) {
  expect_copies_compute_the_same(WeightDType::BF16, false);
  expect_copies_compute_the_same(WeightDType::F32, true);
}

TEST(PlacedWeights, SwitchingConfigurationsCopiesNothingMore) {
  TempDir dir;
  auto m = small_model(dir, WeightDType::BF16, 2, false);
  PlacedWeights& placed = m->placed_weights();
  const auto first = placed.place(*m, {0, 0}, kNoHome);
  const size_t bytes = placed.plan().nodes.at(0).bytes;
  const auto again = placed.place(*m, {0, 0});
  EXPECT_EQ(first, again);
  EXPECT_EQ(placed.plan().nodes.at(0).bytes, bytes);
}

}  // namespace
}  // namespace sandwich
