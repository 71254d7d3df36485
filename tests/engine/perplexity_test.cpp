// Scoring a text as llama-perplexity does: every position's logits from the forward pass, the
// chunks, the statistics, and the file of a base model's log-probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/plans/plan.h"
#include "engine/runtime/executor.h"
#include "engine/scoring/kld_base_file.h"
#include "engine/scoring/perplexity.h"
#include "engine/scoring/score_stats.h"
#include "model_fixtures.h"
#include "quant_files.h"
#include "runtime/forward.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

std::unique_ptr<Model> stories() {
  LoadOptions o;
  o.model = (test::stories_dir() / "stories260K.bin").string();
  o.tokenizer = test::stories_dir() / "tok512.bin";
  o.threads = 2;
  return load_model(o);
}

std::vector<int32_t> stories_text_tokens(const Model& m) {
  return m.tokenizer->encode(test::slurp(test::stories_dir() / "expected_greedy_200.txt"), true);
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return d;
}

// all_logits gives row i what a step ending at token i would give as its last row, in one
// rank or two (whose logits are gathered from their vocabulary shards).
TEST(Perplexity, AllLogitsAreEveryPositionsLastLogits) {
  SANDWICH_REQUIRE_DATA();
  const auto m = stories();
  const int32_t V = m->config.vocab_size, n = 40;
  const std::vector<int32_t> all = stories_text_tokens(*m);
  const std::span<const int32_t> toks(all.data(), n);
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, n, KVCacheDType::F32),
             KVCacheDType::F32);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, n));
  // One token a step: the last (only) row each time.
  std::vector<float> want(static_cast<size_t>(n) * V);
  {
    auto ex = make_executor(*m, kv, single_rank_config(2), {});
    for (int32_t p = 0; p < n; ++p) {
      BatchEntry e{toks.subspan(p, 1), p, blocks};
      ex->run({&e, 1}, want.data() + static_cast<size_t>(p) * V);
    }
  }
  for (const char* config : {"1x2", "2x1"}) {
    ExecutorLimits limits;
    limits.max_tokens = n;
    limits.max_entries = 1;
    limits.max_logit_rows = n;
    auto ex = make_executor(*m, kv, topotree::parse_service_config(config), limits);
    // Two steps, as a chunk longer than the batch runs: 25 tokens, then 15 over their KV.
    std::vector<float> got(static_cast<size_t>(n) * V);
    BatchEntry a{toks.subspan(0, 25), 0, blocks, false, true};
    BatchEntry b{toks.subspan(25, 15), 25, blocks, false, true};
    ASSERT_EQ(a.logit_rows(), 25);
    ex->run({&a, 1}, got.data());
    ex->run({&b, 1}, got.data() + 25 * static_cast<size_t>(V));
    for (int32_t p = 0; p < n; ++p) {
      const size_t off = static_cast<size_t>(p) * V;
      EXPECT_LT(max_abs_diff(std::span<const float>(got).subspan(off, V),
                             std::span<const float>(want).subspan(off, V)),
                1e-3)
          << config << " position " << p;
    }
  }
}

// A rank group keeps max_logit_rows rows of logits in shared memory: a step asking for more is
// refused before it runs.
TEST(Perplexity, RankGroupRefusesMoreLogitRowsThanItsLimit) {
  SANDWICH_REQUIRE_DATA();
  const auto m = stories();
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 32));
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, 32));
  ExecutorLimits limits;
  limits.max_tokens = 32;
  limits.max_entries = 1;  // and so one row of logits
  auto ex = make_executor(*m, kv, topotree::parse_service_config("2x1"), limits);
  const std::vector<int32_t> toks(8, 5);
  std::vector<float> logits(8 * static_cast<size_t>(m->config.vocab_size));
  BatchEntry e{toks, 0, blocks, false, true};
  try {
    ex->run({&e, 1}, logits.data());
    FAIL() << "a step of 8 rows of logits ran with room for 1";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("1 rows of logits"), std::string::npos) << err.what();
  }
}

TEST(Perplexity, ChunksStartWithBosAndScoreTheirSecondHalf) {
  const std::vector<int32_t> t = {7, 8, 9, 10, 11, 12, 13, 14, 15};
  EXPECT_EQ(scoring_chunk(t, 4, 0, 1), (std::vector<int32_t>{1, 8, 9, 10}));
  EXPECT_EQ(scoring_chunk(t, 4, 1, 1), (std::vector<int32_t>{1, 12, 13, 14}));
  EXPECT_EQ(scoring_chunk(t, 4, 1, -1), (std::vector<int32_t>{11, 12, 13, 14}));
  EXPECT_THROW(scoring_chunk(t, 4, 2, 1), std::out_of_range);  // 15 alone is no whole chunk
  // llama-perplexity's positions: n_ctx / 2 .. n_ctx - 2 predict the tokens after them.
  EXPECT_EQ(scored_first(512), 256);
  EXPECT_EQ(scored_count(512), 255);
  EXPECT_EQ(scored_first(5), 2);
  EXPECT_EQ(scored_count(5), 2);
}

// The scorer's PPL over stories260K's reference text against the plain reference forward pass
// (weights in f32, sums in double), token by token, with the same chunks.
TEST(Perplexity, MatchesTheReferenceForwardPass) {
  SANDWICH_REQUIRE_DATA();
  const auto m = stories();
  const std::vector<int32_t> tokens = stories_text_tokens(*m);
  const int32_t n_ctx = 64, V = m->config.vocab_size;
  const int64_t chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
  ASSERT_GE(chunks, 3);
  ScorerOptions so;
  so.n_ctx = n_ctx;
  so.batch = 24;  // chunks in three steps
  so.config = single_rank_config(2);
  so.kv_cache_dtype = KVCacheDType::F32;
  ChunkScorer scorer(*m, so);
  PerplexityStats fast;
  double ref_nll = 0;
  int64_t ref_count = 0;
  std::vector<float> lp(static_cast<size_t>(V));
  for (int64_t i = 0; i < chunks; ++i) {
    const std::vector<int32_t> chunk = scoring_chunk(tokens, n_ctx, i, m->tokenizer->bos_id());
    const std::vector<float> logits = scorer.run(chunk);
    ASSERT_EQ(logits.size(), static_cast<size_t>(scored_count(n_ctx)) * V);
    ReferenceForward ref(*m);
    for (int32_t p = 0; p + 1 < n_ctx; ++p) {
      const std::vector<float> want = ref.step(chunk[p]);
      if (p < scored_first(n_ctx)) continue;
      const int32_t next = chunk[p + 1];
      // log-softmax in double, written out here rather than through the code under test.
      double mx = want[0], z = 0;
      for (float x : want) mx = std::max(mx, static_cast<double>(x));
      for (float x : want) z += std::exp(x - mx);
      ref_nll += -(want[next] - mx - std::log(z));
      ++ref_count;
      const auto row = std::span<const float>(logits).subspan(
          static_cast<size_t>(p - scored_first(n_ctx)) * V, V);
      log_softmax(row, lp);
      fast.add(-lp[next]);
    }
  }
  ASSERT_EQ(fast.count(), ref_count);
  const double want_ppl = std::exp(ref_nll / static_cast<double>(ref_count));
  const Estimate got = fast.ppl();
  EXPECT_TRUE(std::isfinite(got.value));
  EXPECT_GT(got.value, 1.0);
  EXPECT_NEAR(got.value, want_ppl, 1e-4 * want_ppl);
  EXPECT_GT(got.error, 0);
  EXPECT_LT(got.error, got.value);
}

TEST(ScoreStats, LogSoftmaxSumsToOne) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -100.0f};
  std::vector<float> lp(4);
  log_softmax(logits, lp);
  double total = 0;
  for (float v : lp) total += std::exp(v);
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_NEAR(lp[2] - lp[1], 1.0, 1e-6);
  EXPECT_THROW(log_softmax(logits, std::span<float>(lp).first(3)), std::invalid_argument);
}

TEST(ScoreStats, PerplexityAndItsErrorAsLlamaPerplexity) {
  PerplexityStats s;
  for (double nll : {1.0, 2.0, 3.0}) s.add(nll);
  // mean 2, population variance 2/3, error sqrt(var / (n - 1)) = sqrt(1/3), times PPL.
  EXPECT_NEAR(s.ppl().value, std::exp(2.0), 1e-12);
  EXPECT_NEAR(s.ppl().error, std::exp(2.0) * std::sqrt(1.0 / 3.0), 1e-12);
}

TEST(ScoreStats, KlDivergenceOfTwoKnownDistributions) {
  // p = (1/2, 1/4, 1/4), q = (1/4, 1/2, 1/4): KL(p||q) = ln 2 / 2 - ln 2 / 4 = ln 2 / 4.
  const std::vector<float> p = {std::log(0.5f), std::log(0.25f), std::log(0.25f)};
  const std::vector<float> q = {std::log(0.25f), std::log(0.5f), std::log(0.25f)};
  KLDivergenceStats s;
  s.add(p, q, 0);
  EXPECT_NEAR(s.kld().value, std::log(2.0) / 4, 1e-7);
  EXPECT_EQ(s.same_top().value, 0.0);                // argmax 0 against 1
  EXPECT_NEAR(s.delta_p().value, 0.25 - 0.5, 1e-7);  // q(token 0) - p(token 0)
  EXPECT_NEAR(s.kld_quantile(1), std::log(2.0) / 4, 1e-7);
  s.add(p, p, 2);
  EXPECT_EQ(s.count(), 2);
  EXPECT_NEAR(s.kld_quantile(0), 0.0, 0);
  EXPECT_NEAR(s.kld().value, std::log(2.0) / 8, 1e-7);
  EXPECT_NEAR(s.same_top().value, 0.5, 0);
  EXPECT_THROW(s.add(p, std::span<const float>(q).first(2), 0), std::invalid_argument);
}

TEST(ScoreStats, AModelAgainstItselfIsZero) {
  KLDivergenceStats s;
  std::vector<float> logits(50), lp(50);
  for (int t = 0; t < 20; ++t) {
    for (int i = 0; i < 50; ++i) logits[i] = std::sin(0.37f * static_cast<float>(i * (t + 1)));
    log_softmax(logits, lp);
    s.add(lp, lp, t);
  }
  EXPECT_EQ(s.kld().value, 0.0);
  EXPECT_EQ(s.kld_quantile(1), 0.0);
  EXPECT_EQ(s.same_top().value, 1.0);
  EXPECT_EQ(s.rms_delta_p().value, 0.0);
  EXPECT_NEAR(s.ppl_ratio().value, 1.0, 0);
  EXPECT_NEAR(s.ppl().value, s.ppl_base().value, 0);
}

TEST(KLDBaseFile, RoundTripsAndRefusesWhatIsNotOne) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const auto m = stories();
  KLDBaseInfo info = KLDBaseInfo::of(*m);
  info.n_ctx = 6;
  info.n_chunks = 2;
  info.tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const size_t rows = static_cast<size_t>(scored_count(6)) * info.shape.vocab_size;
  std::vector<float> c0(rows, -1.5f), c1(rows, -2.5f);
  const auto file = dir / "base.kld";
  {
    KLDBaseWriter w(file, info);
    w.add_chunk(c0);
    EXPECT_FALSE(std::filesystem::exists(file));  // only once it is whole
    w.add_chunk(c1);
    w.finish();
  }
  KLDBaseReader r(file);
  EXPECT_EQ(r.info().n_ctx, 6);
  EXPECT_EQ(r.info().n_chunks, 2);
  EXPECT_EQ(r.info().tokens, info.tokens);
  EXPECT_EQ(r.info().model, m->source);
  EXPECT_EQ(r.chunk(1)[rows - 1], -2.5f);
  EXPECT_EQ(r.chunk(0)[0], -1.5f);
  EXPECT_NO_THROW(check_base_matches(r.info(), *m, file));

  // A writer given up on leaves nothing behind.
  { KLDBaseWriter w(dir / "gone.kld", info); }
  EXPECT_FALSE(std::filesystem::exists(dir / "gone.kld"));
  EXPECT_FALSE(std::filesystem::exists(dir / "gone.kld.partial"));

  auto bytes = test::read_bytes(file);
  test::write_bytes(dir / "short.kld", {bytes.begin(), bytes.end() - 4});
  EXPECT_THROW(KLDBaseReader(dir / "short.kld"), std::runtime_error);
  test::write_bytes(dir / "text.kld", {'h', 'e', 'l', 'l', 'o'});
  try {
    KLDBaseReader bad(dir / "text.kld");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a KL-divergence base file"), std::string::npos);
  }

  // Another vocabulary: same size and other tokens, or another size.
  KLDBaseInfo other = r.info();
  other.vocab_hash ^= 1;
  EXPECT_THROW(check_base_matches(other, *m, file), std::invalid_argument);
  other = r.info();
  other.shape.vocab_size = 320;
  EXPECT_THROW(check_base_matches(other, *m, file), std::invalid_argument);
  other = r.info();
  other.shape.n_layers = 6;
  try {
    check_base_matches(other, *m, file);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another shape (dim 64, 6 layers"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sandwich::engine
