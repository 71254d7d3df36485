// A pipeline stage's share of a model: loading a range of layers packs only their tensors (and
// the embedding on the first stage, the final norm and head on the last), byte for byte as the
// whole model's; the KV cache of a stage holds its layers only.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/formats/matrix_types.h"
#include "engine/formats/model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/scheduler.h"
#include "error_text.h"
#include "fake_executor.h"
#include "formats/model_weights.h"
#include "model_fixtures.h"
#include "quant_files.h"
#include "runtime/forward.h"
#include "runtime/placed_weights.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

std::unique_ptr<Model> load_stories(LayerRange layers = {}) {
  LoadOptions o = test::stories_load_options();
  o.layers = layers;
  return load_model(o);
}

// A small untied dummy of 4 layers (odd FFN and vocabulary sizes).
std::unique_ptr<Model> load_dummy(const TempDir& dir, LayerRange layers = {}, bool tied = false) {
  test::write_llama_config(dir.path(), {72, 4, 4, 2, 197, 301, 64},
                           {{"tie_word_embeddings", tied}});
  LoadOptions o = test::dummy_weights(dir.path(), WeightDType::BF16);
  o.seed = 3;
  o.threads = 2;
  o.layers = layers;
  return load_model(o);
}

bool same_bytes(const kernels::PackedWeight& a, const kernels::PackedWeight& b) {
  return a.data && b.data && a.bytes == b.bytes && std::memcmp(a.data, b.data, a.bytes) == 0;
}
bool same_norm(const float* a, const float* b, int64_t n) {
  return a && b && std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

std::vector<const kernels::PackedWeight*> matrices(const LayerWeights& L) {
  return {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
}

// `stage` holds exactly its layers, each byte-identical to the whole model's, and the embedding,
// final norm and head where its range says so.
void expect_stage_of(const Model& stage, const Model& whole) {
  const ModelConfig& c = whole.config;
  const ModelWeights& s = stage.weights();
  const ModelWeights& w = whole.weights();
  const LayerRange r = stage.layers();
  ASSERT_EQ(s.layers.size(), static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::vector<const kernels::PackedWeight*> got = matrices(s.layers[l]);
    const std::vector<const kernels::PackedWeight*> want = matrices(w.layers[l]);
    if (!r.holds(l)) {
      for (const kernels::PackedWeight* m : got) EXPECT_EQ(m->data, nullptr);
      EXPECT_EQ(s.layers[l].attn_norm, nullptr);
      EXPECT_EQ(s.layers[l].ffn_norm, nullptr);
      continue;
    }
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bytes(*got[i], *want[i])) << i;
    EXPECT_TRUE(same_norm(s.layers[l].attn_norm, w.layers[l].attn_norm, c.dim));
    EXPECT_TRUE(same_norm(s.layers[l].ffn_norm, w.layers[l].ffn_norm, c.dim));
  }
  if (stage.has_embedding())
    EXPECT_TRUE(same_bytes(s.embedding, w.embedding));
  else
    EXPECT_EQ(s.embedding.data, nullptr);
  if (stage.has_head()) {
    EXPECT_TRUE(same_bytes(s.output, w.output));
    EXPECT_TRUE(same_norm(s.final_norm, w.final_norm, c.dim));
  } else {
    EXPECT_EQ(s.output.data, nullptr);
    EXPECT_EQ(s.final_norm, nullptr);
  }
}

std::string mib(size_t bytes) {
  std::ostringstream os;
  os.precision(3);
  os << std::fixed << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}

// Two stages' weights: together about the whole model's (a tied head held by both ends twice).
void expect_split_bytes(const Model& whole, const Model& a, const Model& b, const char* what) {
  const size_t twice = whole.config.tied_embeddings ? b.weights().output.bytes : 0;
  std::printf(
      "%s: whole %s (%zu bytes); stages %s + %s = %zu bytes (%zu of them a tied head "
      "held twice)\n",
      what, mib(whole.weight_bytes()).c_str(), whole.weight_bytes(), mib(a.weight_bytes()).c_str(),
      mib(b.weight_bytes()).c_str(), a.weight_bytes() + b.weight_bytes(), twice);
  const double sum = static_cast<double>(a.weight_bytes() + b.weight_bytes() - twice);
  // Alignment padding (4 KiB a matrix) may land differently in the parts.
  EXPECT_NEAR(sum, static_cast<double>(whole.weight_bytes()), 4096.0 * 4) << what;
  // A step reads each of them once: the first stage an embedding row, the last the head.
  EXPECT_EQ(a.decode_read_bytes() + b.decode_read_bytes(), whole.decode_read_bytes());
}

TEST(LayerRange, StoriesStagesHoldTheirTensorsAsTheWholeModel) {
  const auto whole = load_stories();
  const int32_t n = whole->config.n_layers;
  ASSERT_GE(n, 2);
  ASSERT_TRUE(whole->config.tied_embeddings);  // llama2.c's shared classifier
  EXPECT_TRUE(whole->whole());
  EXPECT_EQ(whole->layers(), (LayerRange{0, n}));
  EXPECT_EQ(whole->layers_text(), "all " + std::to_string(n) + " layers");
  const int32_t k = 2;
  const auto first = load_stories({0, k});
  const auto last = load_stories({k, -1});
  EXPECT_EQ(first->layers(), (LayerRange{0, k}));
  EXPECT_EQ(last->layers(), (LayerRange{k, n}));
  EXPECT_TRUE(first->has_embedding());
  EXPECT_FALSE(first->has_head());
  EXPECT_FALSE(last->has_embedding());
  EXPECT_TRUE(last->has_head());
  EXPECT_FALSE(first->whole());
  EXPECT_EQ(first->layers_text(), "layers 0-1 of " + std::to_string(n) + " + embedding");
  EXPECT_EQ(last->layers_text(),
            "layers 2-" + std::to_string(n - 1) + " of " + std::to_string(n) + " + head");
  expect_stage_of(*first, *whole);
  expect_stage_of(*last, *whole);
  // The tied head of a last stage without layer 0 is the embedding matrix, packed as its head.
  EXPECT_TRUE(same_bytes(last->weights().output, whole->weights().embedding));
  expect_split_bytes(*whole, *first, *last, "stories260K");
  // A middle stage: neither end.
  const auto middle = load_stories({1, 3});
  EXPECT_EQ(middle->layers_text(), "layers 1-2 of " + std::to_string(n));
  expect_stage_of(*middle, *whole);
}

TEST(LayerRange, DummyStagesHoldTheWholeDummysValues) {
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir dir;
    const auto whole = load_dummy(dir, {}, tied);
    const auto first = load_dummy(dir, {0, 1}, tied);
    const auto last = load_dummy(dir, {1, 4}, tied);
    expect_stage_of(*first, *whole);
    expect_stage_of(*last, *whole);
    expect_split_bytes(*whole, *first, *last, tied ? "dummy tied" : "dummy");
    // The start-up line counts the stage's tensors; the storage a plan checks is the model's.
    EXPECT_EQ(first->weight_storage, whole->weight_storage);
    EXPECT_NE(first->weight_types, whole->weight_types);
    EXPECT_EQ(last->weight_types.rfind("bf16 x " + std::to_string(3 * 7 + 1) + ", f32 x 7", 0), 0u)
        << last->weight_types;
  }
}

TEST(LayerRange, BadRangesAreRefusedNamingTheLayerCount) {
  TempDir dir;
  const LayerRange bad[] = {{-1, 2}, {0, 5}, {2, 2}, {3, 1}, {4, -1}, {0, -2}};
  const ModelConfig c = load_dummy(dir)->config;
  for (const LayerRange r : bad) {
    SCOPED_TRACE(std::to_string(r.begin) + ", " + std::to_string(r.end));
    const std::string e = test::error_text([&] { load_dummy(dir, r); });
    EXPECT_NE(e.find("layer range [" + std::to_string(r.begin) + ", "), std::string::npos) << e;
    EXPECT_NE(e.find("a model of 4 layers"), std::string::npos) << e;
    EXPECT_THROW(KVCache(c, 1 << 20, KVCacheDType::BF16, r), std::runtime_error);
    EXPECT_THROW(KVCache::block_bytes(c, KVCacheDType::BF16, r), std::runtime_error);
  }
  const std::string e = test::error_text([&] { load_stories({0, 9}); });
  EXPECT_NE(e.find("layer range [0, 9) does not fit a model of 5 layers"), std::string::npos) << e;
}

TEST(LayerRange, ReferencePassAndMatrixTypesNeedTheWholeModel) {
  TempDir dir;
  const auto stage = load_dummy(dir, {1, 3});
  std::string e = test::error_text<std::invalid_argument>([&] { ReferenceForward f(*stage); });
  EXPECT_NE(e.find("needs the whole model, and this one holds layers 1-2 of 4"), std::string::npos)
      << e;
  e = test::error_text<std::invalid_argument>([&] { matrix_types(*stage); });
  EXPECT_NE(e.find("need the whole model, and this one holds layers 1-2 of 4"), std::string::npos)
      << e;
}

TEST(LayerRange, StageKVCacheHoldsItsLayersOnly) {
  TempDir dir;
  const ModelConfig c = load_dummy(dir)->config;
  const LayerRange half{2, 4};
  const KVCacheDType dt = KVCacheDType::BF16;
  EXPECT_EQ(KVCache::block_bytes(c, dt, half) * 2, KVCache::block_bytes(c, dt));
  EXPECT_EQ(KVCache::block_bytes(c, dt, {3, 4}) * 4, KVCache::block_bytes(c, dt));
  EXPECT_EQ(KVCache::token_bytes(c, dt, half) * 2, KVCache::token_bytes(c, dt));
  EXPECT_EQ(KVCache::bytes_for_tokens(c, 100, dt, half) * 2, KVCache::bytes_for_tokens(c, 100, dt));
  // A worker's cache of exactly the head's block count.
  for (int32_t blocks : {1, 7, 64}) {
    KVCache kv(c, KVCache::bytes_for_blocks(c, blocks, dt, half), dt, half);
    EXPECT_EQ(kv.num_blocks(), blocks);
    EXPECT_EQ(kv.bytes(), static_cast<size_t>(blocks) * KVCache::block_bytes(c, dt, half));
    EXPECT_EQ(kv.region().size() >= kv.bytes(), true);
  }
  EXPECT_THROW(KVCache::bytes_for_blocks(c, 0, dt, half), std::invalid_argument);
  KVCache kv(c, KVCache::bytes_for_blocks(c, 8, dt, half), dt, half);
  EXPECT_EQ(kv.layers(), half);
  EXPECT_NE(kv.describe().find(", 8 blocks"), std::string::npos) << kv.describe();
  EXPECT_NE(kv.describe().find(", layers 2-3 of 4"), std::string::npos) << kv.describe();
  EXPECT_THROW(kv.layer_data(0), std::out_of_range);
  EXPECT_THROW(kv.layer_data(1), std::out_of_range);
  EXPECT_THROW(kv.layer_data(4), std::out_of_range);
  // The stage's layers, one after the other in its own region.
  const auto* l2 = static_cast<const uint8_t*>(kv.layer_data(2));
  const auto* l3 = static_cast<const uint8_t*>(kv.layer_data(3));
  EXPECT_EQ(l2, kv.region().data());
  EXPECT_EQ(static_cast<size_t>(l3 - l2), kv.bytes() / 2);
  const std::string e = test::error_text<std::out_of_range>([&] { kv.layer_data(1); });
  EXPECT_NE(e.find("layers 2-3 has no layer 1"), std::string::npos) << e;
  // The whole model's cache is as before.
  KVCache all(c, KVCache::bytes_for_blocks(c, 8, dt), dt);
  EXPECT_EQ(all.layers(), (LayerRange{0, 4}));
  EXPECT_EQ(all.num_blocks(), 8);
  EXPECT_NO_THROW(all.layer_data(0));
  EXPECT_EQ(all.describe().find("layers"), std::string::npos) << all.describe();
}

// The scheduler of a stage makes its cache for the stage's layers; its default budget holds as
// many blocks as the whole model's does (each block the stage's share of bytes).
TEST(LayerRange, SchedulerCacheHoldsTheStagesLayers) {
  TempDir dir;
  auto blocks_and_cache = [&](LayerRange r) {
    const auto m = load_dummy(dir, r);
    test::FakeBackend fake(m->config.vocab_size);
    const ExecutorFactory make = fake.factory();
    const KVCache* made = nullptr;
    SchedulerOptions o;
    o.max_num_seqs = 4;
    o.executor_factory = [&](const Model& model, KVCache& kv, const topotree::ServiceConfig& sc,
                             const ExecutorLimits& limits) {
      made = &kv;
      return make(model, kv, sc, limits);
    };
    Scheduler s(*m, o);
    EXPECT_NE(made, nullptr);
    EXPECT_EQ(made->layers(), m->layers());
    return std::pair{s.stats().kv_blocks_total, made->bytes()};
  };
  const auto [whole_blocks, whole_bytes] = blocks_and_cache({});
  const auto [stage_blocks, stage_bytes] = blocks_and_cache({1, 3});
  EXPECT_EQ(stage_blocks, whole_blocks);
  EXPECT_EQ(stage_bytes * 2, whole_bytes);
}

// Tensor-parallel shards of a stage: its FFN granularity over the layers it holds, its placement
// on (pretend) NUMA nodes holding its tensors only.
TEST(LayerRange, StageTensorParallelShardsAndPlacement) {
  TempDir dir;
  const auto whole = load_dummy(dir, {}, true);
  for (const LayerRange r : {LayerRange{0, 2}, LayerRange{2, 4}}) {
    SCOPED_TRACE(std::to_string(r.begin));
    const auto stage = load_dummy(dir, r, true);
    EXPECT_NO_THROW(check_tensor_parallel(*stage, 2));
    for (int rank = 0; rank < 2; ++rank) {
      const RankShards a = rank_shards(*stage, rank, 2), b = rank_shards(*whole, rank, 2);
      EXPECT_EQ(a.ffn_cols, b.ffn_cols);
      EXPECT_EQ(a.q_cols, b.q_cols);
    }
    const std::vector<const ModelWeights*> views =
        stage->placed_weights().place(*stage, {0, 1}, kNoHome, false);
    ASSERT_EQ(views.size(), 2u);
    for (int rank = 0; rank < 2; ++rank) {
      const ModelWeights& v = *views[rank];
      ASSERT_NE(&v, &stage->weights()) << "not placed";
      for (int l = 0; l < 4; ++l)
        EXPECT_EQ(v.layers[l].w_gate.data != nullptr, r.holds(l)) << "layer " << l;
      EXPECT_EQ(v.embedding.data != nullptr, stage->has_embedding());
      EXPECT_EQ(v.output.data != nullptr, stage->has_head());
      EXPECT_EQ(v.final_norm != nullptr, stage->has_head());
      if (stage->has_head()) {
        EXPECT_EQ(std::memcmp(v.output.data, whole->weights().output.data, v.output.bytes), 0);
      }
    }
  }
}

// A quantized file's stage neither reads nor checks the blocks of other layers: a damaged scale
// in layer 1 stops the whole model and the stage holding layer 1, not the stage of layer 0.
TEST(LayerRange, StageLeavesOtherLayersBlocksUnread) {
  TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q4_k_m");
  const size_t q = test::tensor_data_pos(good, "blk.1.attn_q.weight");
  const auto bad = test::patched(dir, good, "inf.gguf", q + 5 * 144, test::kF16Inf);
  auto load = [&](LayerRange r, WeightDType dtype = WeightDType::Auto) {
    LoadOptions o;
    o.model = bad.string();
    o.threads = 2;
    o.layers = r;
    o.dtype = dtype;
    return load_model(o);
  };
  EXPECT_NE(test::error_text([&] { load({}); }).find("infinite scale"), std::string::npos);
  EXPECT_NE(test::error_text([&] { load({1, 2}); }).find("infinite scale"), std::string::npos);
  const auto stage = load({0, 1});
  EXPECT_EQ(stage->weights().layers[1].wq.data, nullptr);
  // Its storage identity is the whole file's; its start-up line counts its own tensors.
  LoadOptions o;
  o.model = good.string();
  o.threads = 2;
  const auto whole = load_model(o);
  EXPECT_EQ(stage->weight_storage, whole->weight_storage);
  EXPECT_EQ(stage->weight_storage_name, whole->weight_storage_name);
  EXPECT_LT(stage->weight_bytes(), whole->weight_bytes());
  // Dequantized on request: the stage's tensors only (the damaged one is never widened).
  const auto widened = load({0, 1}, WeightDType::BF16);
  EXPECT_EQ(widened->weight_storage, "bf16");
  EXPECT_EQ(widened->weights().layers[0].wq.qtype, std::nullopt);
}

size_t resident_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

// Bytes of [p, p + bytes) in memory (mincore): what the loader touched of a region.
size_t resident_bytes(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const size_t span = reinterpret_cast<uintptr_t>(p) + bytes - begin;
  std::vector<unsigned char> in((span + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(begin), span, in.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char v : in) n += v & 1;
  return n * page;
}

// Memory per stage ~ 1/P: the second half of llama-160m (BF16 dummy weights, 6 of 12 layers and
// the untied head) packs and touches about half the whole model's bytes.
TEST(LayerRange, SecondHalfOfARealSizedModelHoldsHalfItsBytes) {
  LoadOptions o;
  o.model = "llama-160m";
  o.load_format = LoadFormat::Dummy;
  o.dtype = WeightDType::BF16;
  o.threads = 2;
  o.layers = {6, -1};
  const size_t rss0 = resident_kib();
  const auto stage = load_model(o);
  const size_t rss1 = resident_kib();
  // The whole model's packed weights: its parameters in BF16 (its norms in F32, a rounding here).
  const double whole = 2.0 * static_cast<double>(stage->config.param_count());
  const double part = static_cast<double>(stage->weight_bytes());
  const double resident =
      static_cast<double>(resident_bytes(stage->region().data(), stage->region().size()));
  const double grown = (static_cast<double>(rss1) - static_cast<double>(rss0)) * 1024;
  std::printf(
      "llama-160m %s: %.1f MiB of the whole model's %.1f MiB (%.3f); its region %.1f MiB "
      "resident, the process +%.1f MiB\n",
      stage->layers_text().c_str(), part / (1 << 20), whole / (1 << 20), part / whole,
      resident / (1 << 20), grown / (1 << 20));
  EXPECT_EQ(stage->layers_text(), "layers 6-11 of 12 + head");
  EXPECT_GT(part / whole, 0.45);
  EXPECT_LT(part / whole, 0.55);
  EXPECT_EQ(stage->decode_read_bytes() <= stage->weight_bytes(), true);
  // What the load touched is the stage's share, not the whole model.
  EXPECT_GT(resident, 0.9 * part);
  EXPECT_LT(resident, 0.55 * whole);
#if !defined(__SANITIZE_ADDRESS__)  // the sanitizer's shadow and quarantine grow the process too
  if (rss0 > 0) {
    EXPECT_LT(grown, 0.8 * whole);
  }
#endif
}

}  // namespace
}  // namespace sandwich::engine
