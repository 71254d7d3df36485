// Rank groups' weights on their NUMA nodes, on this machine: the memory policy of the shard pages
// after a 2-rank executor starts, and ranks reading node copies computing what the loaded
// weights compute; for F32 and BF16 weights and for quantized ones (Q4_K_M's mix of q4_k, q6_k
// and f32, and Q8_0), whose shards are whole 16-row panels and whole blocks.
#include <linux/mempolicy.h>

#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/formats/dummy_model.h"
#include "engine/formats/quantize_model.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/gemm.h"
#include "kernels/panel_slices.h"
#include "quant_storage.h"
#include "runtime/forward.h"
#include "runtime/numa_memory.h"
#include "runtime/placed_weights.h"
#include "test_data.h"
#include "thread_collective.h"
#include "topotree/service_config.h"

namespace sandwich::engine {
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

// A quantized GGUF of 16 heads of 64 over 4 KV heads and an FFN of 5 super-blocks: 2 and 4 ranks
// split every matrix on whole 256-value blocks, the FFN unevenly (2 | 3 blocks, 1 | 1 | 1 | 2),
// and the last layer's q6_k ffn_down (Q4_K_M) into shards whose panels are no whole cache lines.
std::filesystem::path quant_file(const TempDir& dir, const std::string& preset, bool tied) {
  const auto folder = dir / (preset + (tied ? "-tied" : ""));
  const auto file = folder / (preset + ".gguf");
  if (std::filesystem::exists(file)) return file;  // a model loaded from it may still map it
  std::filesystem::create_directories(folder);
  test::write_llama_config(folder, {1024, 2, 16, 4, 1280, 320, 64},
                           {{"tie_word_embeddings", tied}});
  const ModelConfig c = read_model_config(folder);
  write_dummy_gguf_quantized(c, *quant_preset(preset), default_dummy_vocab(c), 7, file);
  return file;
}

std::unique_ptr<Model> load_file(const std::filesystem::path& file) {
  LoadOptions o;
  o.model = file.string();
  o.threads = 2;
  return load_model(o);
}

// The models these tests place: F32/BF16 dummies of odd sizes and quantized files.
struct TestModel {
  std::string name;
  std::function<std::unique_ptr<Model>(const TempDir&)> load;
};

const TestModel kModels[] = {
    {"bf16", [](const TempDir& d) { return small_model(d, WeightDType::BF16, 4, false); }},
    {"q4_k_m", [](const TempDir& d) { return load_file(quant_file(d, "q4_k_m", false)); }},
    {"q8_0 tied", [](const TempDir& d) { return load_file(quant_file(d, "q8_0", true)); }},
};

// The first byte rank `rank` of `n_ranks` reads of a tensor, in the weights it was given.
const void* shard_start(const Model& m, const ModelWeights& w, const std::string& tensor, int rank,
                        int n_ranks) {
  const ModelConfig& c = m.config;
  const std::vector<WeightTensor> tensors = weight_tensors(c, weight_storage(m));
  for (const WeightTensor& t : tensors) {
    if (t.name != tensor) continue;
    const WeightPiece p = rank_piece(t, rank_shards(c, tensors, rank, n_ranks));
    const kernels::PackedWeight& pw = tensor == "blk.0.ffn_gate.weight"   ? w.layers[0].w_gate
                                      : tensor == "blk.1.ffn_down.weight" ? w.layers[1].w_down
                                                                          : w.embedding;
    const auto* base = static_cast<const uint8_t*>(pw.data);
    if (&w != &m.weights()) return base;  // a copy holds the shard alone
    if (p.split == WeightSplit::Columns) return base + p.range.begin / pw.panel * pw.panel_bytes();
    if (p.split == WeightSplit::KRange)
      return base + kernels::panel_k_bytes(pw, 0, p.range.begin, p.range.end).offset;
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
                                "blk.1.ffn_down.weight"};

// The packed bytes of the loaded matrices and norms: what the home node holds.
size_t loaded_bytes(const Model& m) {
  const ModelWeights& w = m.weights();
  size_t b = w.embedding.bytes + (m.config.tied_embeddings ? 0 : w.output.bytes);
  for (const LayerWeights& L : w.layers)
    for (const kernels::PackedWeight* pw :
         {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      b += pw->bytes;
  return b + static_cast<size_t>(2 * m.config.n_layers + 1) * m.config.dim * sizeof(float);
}

// A 2-rank group on this one-node machine: the loaded weights are bound to node 0 in place, so
// the ranks read every shard there and nothing is copied.
TEST(PlacedWeights, TwoRankGroupBindsTheLoadedWeightsToItsNode) {
  for (const TestModel& tm : kModels) {
    SCOPED_TRACE(tm.name);
    TempDir dir;
    auto m = tm.load(dir);
    EXPECT_EQ(page_policy(m->region().data()).mode, MPOL_DEFAULT);
    KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
    auto ex = make_executor(*m, kv, topotree::parse_service_config("2x1"), {});
    const WeightPlacementPlan plan = m->placed_weights().plan();
    ASSERT_EQ(plan.nodes.size(), 1u);
    EXPECT_TRUE(plan.nodes[0].home);
    EXPECT_EQ(plan.nodes[0].node, 0);
    EXPECT_EQ(plan.nodes[0].bytes, loaded_bytes(*m));  // packed, as loaded
    for (const char* t : kTensors)
      for (int r = 0; r < 2; ++r)
        expect_bound_to_node0(shard_start(*m, m->weights(), t, r, 2),
                              std::string(t) + " rank " + std::to_string(r));
  }
}

// The planner's view of a quantized file's storage is the preset's per-tensor mix.
TEST(PlacedWeights, QuantizedStorageIsThePresetsMix) {
  TempDir dir;
  auto m = load_file(quant_file(dir, "q4_k_m", false));
  const WeightStorage s = weight_storage(*m);
  EXPECT_EQ(s.quantized, test::preset_storage(m->config, "q4_k_m").quantized);
  EXPECT_EQ(s.quantized.at("blk.1.ffn_down.weight"), kernels::QType::Q6_K);
  EXPECT_EQ(s.quantized.at("blk.0.ffn_down.weight"), kernels::QType::Q4_K);
}

// The copies a node without the loaded weights gets (forced here with kNoHome): bound to their
// node and apart from the loaded region, one copy per node of what all ranks read.
TEST(PlacedWeights, NodeCopiesAreBoundToTheirNode) {
  for (const TestModel& tm : kModels) {
    SCOPED_TRACE(tm.name);
    TempDir dir;
    auto m = tm.load(dir);
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
      ForwardPass fp(m, kv, team, RankView{r, R}, &coll, GemmModes{.batch_invariant = true},
                     views[r]);
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
void expect_copies_compute_the_same(const Model& m) {
  PlacedWeights& placed = m.placed_weights();
  const auto two = placed.place(m, {0, 1}, kNoHome, false);
  const auto four = placed.place(m, {0, 1, 1, 1}, kNoHome, false);
  for (const ModelWeights* w : four) ASSERT_NE(w, &m.weights());
  const kernels::PackedWeight& down = m.weights().layers[1].w_down;
  EXPECT_LT(two[1]->layers[1].w_down.k, down.k);
  EXPECT_EQ(four[2]->layers[1].w_down.data, two[1]->layers[1].w_down.data);
  EXPECT_EQ(four[3]->layers[1].w_down.k, two[1]->layers[1].w_down.k);
  EXPECT_NE(four[1]->layers[1].w_down.data, four[0]->layers[1].w_down.data);
  EXPECT_EQ(run_ranks(m, two), run_ranks(m, {nullptr, nullptr}));
  EXPECT_EQ(run_ranks(m, four), run_ranks(m, {nullptr, nullptr, nullptr, nullptr}));
}

TEST(PlacedWeights, NodeCopiesComputeWhatTheLoadedWeightsDo) {
  TempDir dir;
  expect_copies_compute_the_same(*small_model(dir, WeightDType::BF16, 4, false));
  expect_copies_compute_the_same(*small_model(dir, WeightDType::F32, 4, true));
}

TEST(PlacedWeights, QuantizedNodeCopiesComputeWhatTheLoadedWeightsDo) {
  TempDir dir;
  for (const std::string preset : {"q4_k_m", "q8_0"})
    for (bool tied : {false, true}) {
      SCOPED_TRACE(preset + (tied ? " tied" : ""));
      auto m = load_file(quant_file(dir, preset, tied));
      ASSERT_TRUE(m->weights().layers[1].w_down.qtype);
      expect_copies_compute_the_same(*m);
    }
}

// Logits of one prompt through a 2x1 executor (rank processes).
std::vector<float> executor_logits(const Model& m) {
  const int V = m.config.vocab_size;
  KVCache kv(m.config, KVCache::bytes_for_tokens(m.config, 32));
  ExecutorLimits lim;
  lim.max_tokens = 32;
  lim.max_entries = 1;
  auto ex = make_executor(m, kv, topotree::parse_service_config("2x1"), lim);
  std::vector<int32_t> prompt, blocks;
  for (int i = 0; i < 13; ++i) prompt.push_back((i * 37 + 5) % V);
  EXPECT_TRUE(kv.reserve(blocks, 32));
  std::vector<float> logits(V);
  BatchEntry e{prompt, 0, blocks, true};
  ex->run({&e, 1}, logits.data());
  return logits;
}

// A 2x1 executor whose ranks read node copies (the group's node made a copy node before it
// starts: kNoHome) gives bitwise the logits of one reading the loaded weights, and the copies'
// shard pages are bound to the node.
TEST(PlacedWeights, ExecutorReadingNodeCopiesGivesTheLoadedWeightsLogits) {
  for (const TestModel& tm : kModels) {
    SCOPED_TRACE(tm.name);
    TempDir dir;
    auto loaded = tm.load(dir);
    auto copied = tm.load(dir);
    const auto views = copied->placed_weights().place(*copied, {0, 0}, kNoHome);
    ASSERT_NE(views[0], &copied->weights());
    const std::vector<float> want = executor_logits(*loaded);
    EXPECT_EQ(executor_logits(*copied), want);
    // The executor's ranks were given the same copies.
    EXPECT_EQ(copied->placed_weights().place(*copied, {0, 0}), views);
    for (const char* t : kTensors)
      for (int r = 0; r < 2; ++r)
        expect_bound_to_node0(shard_start(*copied, *views[r], t, r, 2),
                              std::string(t) + " copy for rank " + std::to_string(r));
  }
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
}  // namespace sandwich::engine
