// The pipeline's parts that need no MPI job: the layer split, micro-batches, the messages between
// nodes, and a stage's forward pass against the whole model's (tests/pipeline runs the real
// thing under mpirun).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/formats/model.h"
#include "engine/pipeline/pipeline.h"
#include "kernels/thread_team.h"
#include "model_fixtures.h"
#include "pipeline/pipeline_impl.h"
#include "pipeline/step_message.h"
#include "runtime/forward.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

ModelConfig shape(int layers, int dim, int ffn, int vocab) {
  ModelConfig c;
  c.n_layers = layers;
  c.dim = dim;
  c.ffn_dim = ffn;
  c.n_heads = 8;
  c.n_kv_heads = 8;
  c.head_dim = dim / 8;
  c.vocab_size = vocab;
  return c;
}

int32_t count(const LayerRange& r) {
  return r.end - r.begin;
}

TEST(PipelineLayerSplit, CoversEveryLayerOnceInOrder) {
  for (int layers : {1, 2, 5, 12, 22, 32, 80})
    for (int stages = 1; stages <= std::min(layers, 6); ++stages) {
      const auto split = pipeline_layer_split(shape(layers, 512, 1536, 32000), stages);
      ASSERT_EQ(static_cast<int>(split.size()), stages);
      int32_t at = 0;
      for (const LayerRange& r : split) {
        EXPECT_EQ(r.begin, at);
        EXPECT_GE(count(r), 1);
        at = r.end;
      }
      EXPECT_EQ(at, layers);
    }
}

TEST(PipelineLayerSplit, TheHeadWeighsOnTheLastNode) {
  // Llama-3-8B's shape: the output head is about 2.4 layers of bytes, counted at a quarter.
  ModelConfig c = shape(32, 4096, 14336, 128256);
  c.n_kv_heads = 8;
  c.n_heads = 32;
  c.head_dim = 128;
  const auto two = pipeline_layer_split(c, 2);
  EXPECT_EQ(count(two[0]), 16);
  EXPECT_EQ(count(two[1]), 16);
  const auto three = pipeline_layer_split(c, 3);
  EXPECT_EQ(count(three[0]), 11);
  EXPECT_EQ(count(three[1]), 11);
  EXPECT_EQ(count(three[2]), 10);
  // A tiny vocabulary weighs nothing: an even split.
  const auto even = pipeline_layer_split(shape(12, 768, 3072, 64), 3);
  for (const LayerRange& r : even) EXPECT_EQ(count(r), 4);
}

TEST(PipelineLayerSplit, GivenSplitsAreCheckedWithOneLine) {
  const ModelConfig c = shape(5, 64, 128, 512);
  const auto split = pipeline_layer_split(c, 2, {2, 3});
  EXPECT_EQ(split[0].end, 2);
  EXPECT_EQ(split[1].begin, 2);
  auto message = [&](int stages, std::vector<int32_t> given) {
    try {
      pipeline_layer_split(c, stages, given);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(2, {2, 2}).find("sums to 4 layers, but the model has 5"), std::string::npos);
  EXPECT_NE(message(3, {2, 3}).find("gives 2 nodes, but there are 3"), std::string::npos);
  EXPECT_NE(message(2, {0, 5}).find("at least one layer"), std::string::npos);
  EXPECT_NE(message(6, {}).find("more nodes than the model has layers (5)"), std::string::npos);
  EXPECT_NE(message(0, {}).find("at least 1"), std::string::npos);
}

// Entries over `lengths` tokens each, with block tables and distinct token ids.
struct Batch {
  std::vector<std::vector<int32_t>> tokens, tables;
  std::vector<BatchEntry> entries;
  explicit Batch(const std::vector<int>& lengths, int start = 0) {
    for (size_t i = 0; i < lengths.size(); ++i) {
      tokens.emplace_back(lengths[i]);
      std::iota(tokens.back().begin(), tokens.back().end(), static_cast<int32_t>(1000 * i));
      tables.emplace_back(KVCache::blocks_for(start + lengths[i]));
      std::iota(tables.back().begin(), tables.back().end(), static_cast<int32_t>(10 * i));
    }
    for (size_t i = 0; i < lengths.size(); ++i) entries.push_back({tokens[i], start, tables[i]});
  }
};

// The pieces' tokens in order are the batch's, positions follow on, logits come from the last
// piece of an entry only.
void expect_same_tokens(const Batch& b, const std::vector<std::vector<BatchEntry>>& pieces) {
  std::vector<int32_t> all, cut;
  int64_t rows = 0, cut_rows = 0;
  for (const BatchEntry& e : b.entries) {
    all.insert(all.end(), e.tokens.begin(), e.tokens.end());
    rows += e.logit_rows();
  }
  for (const auto& piece : pieces) {
    ASSERT_FALSE(piece.empty());
    for (const BatchEntry& e : piece) {
      ASSERT_FALSE(e.tokens.empty());
      EXPECT_EQ(e.tokens[0] % 1000 + b.entries[0].start_pos, e.start_pos);
      cut.insert(cut.end(), e.tokens.begin(), e.tokens.end());
      cut_rows += e.logit_rows();
    }
  }
  EXPECT_EQ(all, cut);
  EXPECT_EQ(rows, cut_rows);
}

TEST(PipelineMicroBatches, DecodeIsCutBySequences) {
  Batch b(std::vector<int>(16, 1), 40);
  const auto pieces = cut_micro_batches(b.entries, 2);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].size(), 8u);
  EXPECT_EQ(pieces[1].size(), 8u);
  expect_same_tokens(b, pieces);
  EXPECT_EQ(auto_micro_batches(b.entries, 3), 3);
  Batch one(std::vector<int>(1, 1), 7);
  EXPECT_EQ(cut_micro_batches(one.entries, 4).size(), 1u);  // M = 1 is never cut
  EXPECT_EQ(auto_micro_batches(one.entries, 4), 1);
  Batch odd(std::vector<int>(5, 1));
  const auto three = cut_micro_batches(odd.entries, 3);
  ASSERT_EQ(three.size(), 3u);
  expect_same_tokens(odd, three);
}

TEST(PipelineMicroBatches, PrefillIsCutByTokensAcrossAndWithinPrompts) {
  Batch b({100, 7, 150});
  for (int pieces : {1, 2, 3, 5, 8, 64}) {
    const auto cut = cut_micro_batches(b.entries, pieces);
    EXPECT_LE(static_cast<int>(cut.size()), pieces);
    expect_same_tokens(b, cut);
    // The last piece of every entry asks for its logits; the others for none.
    int with_logits = 0;
    for (const auto& piece : cut)
      for (const BatchEntry& e : piece) with_logits += e.want_logits;
    EXPECT_EQ(with_logits, 3);
  }
  // 257 tokens: 8 pieces of >= 32 tokens (at most 16 a node).
  EXPECT_EQ(auto_micro_batches(b.entries, 2), 8);
  EXPECT_EQ(auto_micro_batches(b.entries, 1), 8);
  Batch small({20});
  EXPECT_EQ(auto_micro_batches(small.entries, 2), 1);
}

TEST(PipelineMicroBatches, EntriesWantingEveryRowAreNotCut) {
  Batch b({64, 64});
  b.entries[0].all_logits = true;
  b.entries[1].hidden = HiddenOutput::Sum;
  const auto cut = cut_micro_batches(b.entries, 8);
  for (const auto& piece : cut)
    for (const BatchEntry& e : piece) EXPECT_EQ(e.tokens.size(), 64u);
  expect_same_tokens(b, cut);
}

TEST(PipelineMessages, RoundTripAndRefuseWhatIsNotOurs) {
  Batch b({3, 1});
  pipeline::Message m;
  m.kind = pipeline::Kind::Step;
  m.phase = 1;
  m.step = 42;
  m.micro = 3;
  m.set_batch(b.entries);
  m.rows = {1.5f, -2.0f, 3.25f};
  m.busy_seconds = 0.125;
  m.text = "node 1";
  const pipeline::Bytes bytes = pipeline::encode(m);
  const pipeline::Message d = pipeline::decode(bytes);
  EXPECT_EQ(d.kind, m.kind);
  EXPECT_EQ(d.step, 42u);
  EXPECT_EQ(d.micro, 3u);
  EXPECT_EQ(d.rows, m.rows);
  EXPECT_EQ(d.text, "node 1");
  EXPECT_EQ(d.busy_seconds, 0.125);
  const auto batch = d.batch();
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(batch[0].tokens.begin(), batch[0].tokens.end()), b.tokens[0]);
  EXPECT_EQ(std::vector<int32_t>(batch[1].block_table.begin(), batch[1].block_table.end()),
            b.tables[1]);
  // Truncated, grown, foreign, and entries pointing outside: refused, never read past the end.
  for (size_t keep : {size_t{0}, size_t{10}, bytes.size() - 1}) {
    pipeline::Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    EXPECT_THROW(pipeline::decode(cut), std::runtime_error);
  }
  pipeline::Bytes longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(pipeline::decode(longer), std::runtime_error);
  pipeline::Bytes foreign = bytes;
  foreign[0] ^= 0xff;
  EXPECT_THROW(pipeline::decode(foreign), std::runtime_error);
  pipeline::Message bad = m;
  bad.entries[1].token_offset = 1000;
  EXPECT_THROW(pipeline::decode(pipeline::encode(bad)), std::runtime_error);
}

// Two stages of stories260K, one after the other in this process, give the whole model's logits
// bit for bit: what each node of a pipeline computes, without MPI.
TEST(PipelineStages, TwoStagesChainedEqualTheWholeModel) {
  SANDWICH_REQUIRE_DATA();
  LoadOptions o = test::stories_load_options(1);
  const auto whole = load_model(o);
  const int32_t L = whole->config.n_layers;
  o.layers = {0, 2};
  const auto first = load_model(o);
  o.layers = {2, L};
  const auto second = load_model(o);
  ASSERT_FALSE(first->has_head());
  ASSERT_FALSE(second->has_embedding());

  const ModelConfig& c = whole->config;
  KVCache kv_whole(c, KVCache::bytes_for_blocks(c, 8)),
      kv_first(c, KVCache::bytes_for_blocks(c, 8, kDefaultKVCacheDType, first->layers()),
               kDefaultKVCacheDType, first->layers()),
      kv_second(c, KVCache::bytes_for_blocks(c, 8, kDefaultKVCacheDType, second->layers()),
                kDefaultKVCacheDType, second->layers());
  kernels::ThreadTeam team(1);
  ForwardPass fw(*whole, kv_whole, team), f1(*first, kv_first, team), f2(*second, kv_second, team);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 11, 90};
  const std::vector<int32_t> table = {0, 1};
  std::vector<float> expect(c.vocab_size), got(c.vocab_size),
      hidden(prompt.size() * static_cast<size_t>(c.dim));
  BatchEntry e{prompt, 0, table};
  fw.run({&e, 1}, expect.data());
  f1.run({&e, 1}, StageIO{nullptr, hidden.data()}, nullptr, nullptr);
  f2.run({&e, 1}, StageIO{hidden.data(), nullptr}, got.data(), nullptr);
  EXPECT_EQ(expect, got);
  // A decode step after it, through the stages' own KV caches.
  const std::vector<int32_t> next = {300};
  BatchEntry d{next, static_cast<int32_t>(prompt.size()), table};
  fw.run({&d, 1}, expect.data());
  f1.run({&d, 1}, StageIO{nullptr, hidden.data()}, nullptr, nullptr);
  f2.run({&d, 1}, StageIO{hidden.data(), nullptr}, got.data(), nullptr);
  EXPECT_EQ(expect, got);
  // A stage without the embedding refuses a step without hidden states.
  EXPECT_THROW(f2.run({&d, 1}, got.data()), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::engine
