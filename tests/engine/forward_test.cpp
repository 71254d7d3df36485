#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/runtime/generator.h"
#include "kernels/attention_tunables.h"
#include "kernels/kernel_tunables.h"
#include "runtime/forward.h"
#include "test_data.h"
#include "thread_collective.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

// A small model with every feature that matters: GQA, several layers, head size not a multiple
// of 16, odd FFN and vocabulary sizes.
std::unique_ptr<Model> tiny_model(const TempDir& dir, WeightDType dtype, int dim = 72,
                                  int heads = 4, int kv_heads = 2, int ffn = 97, int vocab = 301) {
  test::write_llama_config(dir.path(), {dim, 3, heads, kv_heads, ffn, vocab, 300},
                           {{"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}});
  LoadOptions o = test::dummy_weights(dir.path(), dtype);
  o.seed = 3;
  o.threads = 2;
  return load_model(o);
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

void expect_logits_close(const float* got, const std::vector<float>& want, double rel,
                         const std::string& what) {
  const double scale = max_abs(want);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * scale) << what << " logit " << i;
}

std::vector<int32_t> some_tokens(int n, int vocab, int salt) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + salt * 11 + 5) % vocab;
  return t;
}

class ForwardVsReference : public ::testing::TestWithParam<std::tuple<WeightDType, KVCacheDType>> {
};

TEST_P(ForwardVsReference, PrefillThenDecodeMatches) {
  const auto [weights, kv_dtype] = GetParam();
  TempDir dir;
  auto m = tiny_model(dir, weights);
  const int V = m->config.vocab_size;
  // F32 differs from the reference only in summation order; BF16 weights may also round the
  // activations to BF16 inside the GEMM. A BF16 KV cache rounds K and V by up to 2^-9 of
  // themselves: the logits move by ~6e-4 of the largest here (the tolerance is 8x that).
  const double tol = weights == WeightDType::BF16     ? 3e-2
                     : kv_dtype == KVCacheDType::BF16 ? 5e-3
                                                      : 1e-4;
  ReferenceForward ref(*m);
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64, kv_dtype), kv_dtype);
  kernels::ThreadTeam team(2);
  ForwardPass fp(*m, kv, team);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, 64));
  auto prompt = some_tokens(37, V, 1);
  std::vector<float> logits(V), want;
  BatchEntry e{prompt, 0, blocks, true};
  fp.run({&e, 1}, logits.data());
  for (int32_t t : prompt) want = ref.step(t);
  expect_logits_close(logits.data(), want, tol, "prefill");
  for (int step = 0; step < 8; ++step) {
    const int32_t next = argmax(want.data(), V);
    BatchEntry d{std::span<const int32_t>(&next, 1), static_cast<int32_t>(prompt.size()) + step,
                 blocks, true};
    fp.run({&d, 1}, logits.data());
    want = ref.step(next);
    expect_logits_close(logits.data(), want, tol, "decode step " + std::to_string(step));
  }
}

INSTANTIATE_TEST_SUITE_P(
    DTypes, ForwardVsReference,
    ::testing::Combine(::testing::Values(WeightDType::F32, WeightDType::BF16),
                       ::testing::Values(KVCacheDType::F32, KVCacheDType::BF16)),
    [](const auto& i) {
      return std::string(std::get<0>(i.param) == WeightDType::F32 ? "F32" : "BF16") + "WeightsKV" +
             std::string(kv_cache_dtype_name(std::get<1>(i.param)));
    });

class ForwardKV : public ::testing::TestWithParam<KVCacheDType> {};

TEST_P(ForwardKV, BatchingAndChunkingDoNotChangeResults) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  const int V = m->config.vocab_size;
  const KVCacheDType kv_dtype = GetParam();
  // F32: the GEMMs' summation order only. BF16: that order can also move a K or V element to
  // the neighbouring bf16 value (2^-8 of it): ~2e-5 of the largest logit here.
  const double tol = kv_dtype == KVCacheDType::F32 ? 1e-5 : 2e-4;
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64, kv_dtype) * 4, kv_dtype);
  kernels::ThreadTeam team(2);
  ForwardPass fp(*m, kv, team);
  auto a = some_tokens(30, V, 2), b = some_tokens(19, V, 3);

  // Alone, in one shot.
  std::vector<int32_t> ta, tb;
  ASSERT_TRUE(kv.reserve(ta, 40));
  ASSERT_TRUE(kv.reserve(tb, 40));
  std::vector<float> la(V), lb(V);
  BatchEntry ea{a, 0, ta, true}, eb{b, 0, tb, true};
  fp.run({&ea, 1}, la.data());
  fp.run({&eb, 1}, lb.data());

  // Together, a in chunks of 7 next to b in one chunk, with fresh blocks.
  std::vector<int32_t> ta2, tb2;
  ASSERT_TRUE(kv.reserve(ta2, 40));
  ASSERT_TRUE(kv.reserve(tb2, 40));
  std::vector<float> out(2 * V);
  for (int s = 0; s < 30; s += 7) {
    const int n = std::min(7, 30 - s);
    std::vector<BatchEntry> batch = {
        {std::span<const int32_t>(a).subspan(s, n), s, ta2, s + n == 30}};
    if (s == 0) batch.push_back({b, 0, tb2, true});
    std::vector<float> l(batch.size() * V);
    fp.run(batch, l.data());
    if (s == 0)
      std::copy(l.begin() + (batch[0].want_logits ? V : 0),
                l.begin() + (batch[0].want_logits ? 2 * V : V), out.begin() + V);
    if (s + n == 30) std::copy(l.begin(), l.begin() + V, out.begin());
  }
  expect_logits_close(out.data(), la, tol, "chunked a");
  expect_logits_close(out.data() + V, lb, tol, "batched b");

  // A decode step for both in one batch equals separate steps.
  const int32_t na = argmax(la.data(), V), nb = argmax(lb.data(), V);
  std::vector<BatchEntry> both = {{std::span<const int32_t>(&na, 1), 30, ta, true},
                                  {std::span<const int32_t>(&nb, 1), 19, tb, true}};
  std::vector<float> lboth(2 * V), l1(V), l2(V);
  fp.run(both, lboth.data());
  std::vector<BatchEntry> one = {{std::span<const int32_t>(&na, 1), 30, ta2, true}};
  fp.run(one, l1.data());
  one = {{std::span<const int32_t>(&nb, 1), 19, tb2, true}};
  fp.run(one, l2.data());
  expect_logits_close(lboth.data(), l1, tol, "decode a");
  expect_logits_close(lboth.data() + V, l2, tol, "decode b");
}

INSTANTIATE_TEST_SUITE_P(DTypes, ForwardKV,
                         ::testing::Values(KVCacheDType::F32, KVCacheDType::BF16),
                         [](const auto& i) { return std::string(kv_cache_dtype_name(i.param)); });

// Installed attention block sizes (kernel_tunables) change the work split and the kernel's loop,
// never a logit's bits.
TEST(Forward, TunedAttentionParamsKeepTheBits) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  const ModelConfig& c = m->config;
  const int V = c.vocab_size;
  KVCache kv(c, KVCache::bytes_for_tokens(c, 64) * 4);
  kernels::ThreadTeam team(2);
  const auto tokens = some_tokens(37, V, 4);
  const auto run = [&] {
    ForwardPass fp(*m, kv, team);
    std::vector<int32_t> table;
    EXPECT_TRUE(kv.reserve(table, 40));
    std::vector<float> logits(2 * V);
    BatchEntry e{tokens, 0, table, true};
    fp.run({&e, 1}, logits.data());
    const int32_t next = argmax(logits.data(), V);
    BatchEntry d{std::span<const int32_t>(&next, 1), 37, table, true};
    fp.run({&d, 1}, logits.data() + V);
    kv.release(table);
    return logits;
  };
  kernels::clear_kernel_params();
  const std::vector<float> want = run();
  const auto key = kernels::attention_key(c.head_dim, c.n_heads / c.n_kv_heads, c.n_kv_heads, 2);
  kernels::install_kernel_params(kernels::kAttentionPrefill, key, 1, 1000,
                                 {{"q_chunk", 5}, {"pass_rows", 12}, {"kv_blocks", 3}});
  kernels::install_kernel_params(kernels::kAttentionDecode, key, 1, 1000, {{"kv_blocks", 2}});
  ASSERT_EQ(kernels::attention_prefill_plan(key, 37).q_chunk, 5);  // the key the forward asks
  const std::vector<float> got = run();
  kernels::clear_kernel_params();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
}

TEST(Forward, TwoRankViewsEqualOneRank) {
  TempDir dir;
  // Head size 18: head shards do not start on the GEMM's 64-column panels.
  auto m = tiny_model(dir, WeightDType::F32);
  const int V = m->config.vocab_size;
  auto prompt = some_tokens(21, V, 4);
  std::vector<float> want(V);
  {
    KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 32));
    kernels::ThreadTeam team(1);
    ForwardPass fp(*m, kv, team);
    std::vector<int32_t> blocks;
    ASSERT_TRUE(kv.reserve(blocks, 32));
    BatchEntry e{prompt, 0, blocks, true};
    fp.run({&e, 1}, want.data());
  }
  // Both ranks share one KV cache, as ranks share the shared-memory pages.
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 32));
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, 32));
  test::Exchange exchange(2);
  std::vector<std::vector<float>> got(2, std::vector<float>(V));
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      kernels::ThreadTeam team(1);
      test::ThreadCollective coll(exchange, r);
      ForwardPass fp(*m, kv, team, RankView{r, 2}, &coll);
      BatchEntry e{prompt, 0, blocks, true};
      fp.run({&e, 1}, got[r].data());
    });
  for (auto& t : ranks) t.join();
  expect_logits_close(got[0].data(), want, 1e-5, "rank 0");
  expect_logits_close(got[1].data(), want, 1e-5, "rank 1");
}

TEST(Forward, RejectsBadBatches) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 300));
  kernels::ThreadTeam team(1);
  ForwardPass fp(*m, kv, team);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, 16));
  std::vector<float> logits(m->config.vocab_size);
  std::vector<int32_t> bad = {5, 301};
  BatchEntry e{bad, 0, blocks, true};
  EXPECT_THROW(fp.run({&e, 1}, logits.data()), std::invalid_argument);
  std::vector<int32_t> ok(20, 1);
  e = {ok, 0, blocks, true};  // 20 tokens, blocks cover 16
  EXPECT_THROW(fp.run({&e, 1}, logits.data()), std::invalid_argument);
  e = {std::span<const int32_t>(ok).subspan(0, 2), 299, blocks, true};
  EXPECT_THROW(fp.run({&e, 1}, logits.data()), std::invalid_argument);
  EXPECT_THROW(ForwardPass(*m, kv, team, RankView{0, 3}, nullptr), std::invalid_argument);
}

TEST(Forward, KVCacheAllocatesAndFreesBlocks) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  KVCache kv(m->config, KVCache::block_bytes(m->config) * 5);
  EXPECT_EQ(kv.num_blocks(), 5);
  std::vector<int32_t> a, b;
  EXPECT_TRUE(kv.reserve(a, 33));  // 3 blocks
  EXPECT_EQ(kv.free_blocks(), 2);
  EXPECT_FALSE(kv.reserve(b, 48));
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(kv.reserve(a, 48));  // grows by nothing: 48 fits 3 blocks
  EXPECT_EQ(a.size(), 3u);
  kv.release(a);
  EXPECT_EQ(kv.free_blocks(), 5);
  EXPECT_THROW(KVCache(m->config, 10), std::runtime_error);
}

// BF16 blocks take exactly half the bytes of F32 ones: the same budget holds twice the tokens.
TEST(Forward, Bf16KVCacheHoldsTwiceTheTokens) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  const ModelConfig& c = m->config;
  // K and V, every layer, every KV head.
  const size_t f32_token = size_t{2} * c.n_layers * c.n_kv_heads * c.head_dim * 4;
  EXPECT_EQ(KVCache::token_bytes(c, KVCacheDType::F32), f32_token);
  EXPECT_EQ(KVCache::token_bytes(c, KVCacheDType::BF16) * 2, f32_token);
  EXPECT_EQ(KVCache::token_bytes(c), KVCache::token_bytes(c, KVCacheDType::BF16));  // default
  EXPECT_EQ(KVCache::block_bytes(c, KVCacheDType::F32),
            2 * KVCache::block_bytes(c, KVCacheDType::BF16));
  const size_t budget = KVCache::block_bytes(c, KVCacheDType::F32) * 6;
  KVCache f32(c, budget, KVCacheDType::F32), bf16(c, budget, KVCacheDType::BF16);
  EXPECT_EQ(f32.num_blocks(), 6);
  EXPECT_EQ(bf16.num_blocks(), 12);
  EXPECT_EQ(bf16.bytes(), f32.bytes());
  EXPECT_EQ(bf16.region().size(), f32.region().size());
  EXPECT_EQ(bf16.describe().rfind("bf16, 12 blocks (192 tokens, ", 0), 0u) << bf16.describe();
  EXPECT_EQ(f32.describe().rfind("f32, 6 blocks (96 tokens, ", 0), 0u) << f32.describe();
}

// The fast path over a BF16 cache equals itself over an F32 cache of the same model up to the
// rounding of K and V, and takes the same greedy tokens on this model.
TEST(Forward, Bf16KVCacheFollowsF32Greedily) {
  TempDir dir;
  auto m = tiny_model(dir, WeightDType::F32);
  const int V = m->config.vocab_size;
  kernels::ThreadTeam team(2);
  auto greedy = [&](KVCacheDType t, std::vector<std::vector<float>>& all) {
    KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64, t), t);
    ForwardPass fp(*m, kv, team);
    std::vector<int32_t> blocks;
    EXPECT_TRUE(kv.reserve(blocks, 64));
    std::vector<int32_t> tokens = some_tokens(20, V, 6);
    std::vector<float> logits(V);
    BatchEntry e{tokens, 0, blocks, true};
    fp.run({&e, 1}, logits.data());
    for (int step = 0; step < 30; ++step) {
      all.push_back(logits);
      tokens.push_back(argmax(logits.data(), V));
      BatchEntry d{std::span<const int32_t>(&tokens.back(), 1),
                   static_cast<int32_t>(tokens.size()) - 1, blocks, true};
      fp.run({&d, 1}, logits.data());
    }
    return tokens;
  };
  std::vector<std::vector<float>> lf, lb;
  EXPECT_EQ(greedy(KVCacheDType::BF16, lb), greedy(KVCacheDType::F32, lf));
  for (size_t s = 0; s < lf.size(); ++s) expect_logits_close(lb[s].data(), lf[s], 5e-3, "step");
}

}  // namespace
}  // namespace sandwich::engine
