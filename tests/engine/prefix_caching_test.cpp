// Prefix caching with real forward passes: a request whose prompt starts with blocks another
// request computed gives what it gives on a cold server (prefix caching off), with one rank and
// with two ranks reading the shared KV pages.
//
// What "the same" means: a block written by a prefill keeps its values, but the suffix after a
// hit is computed in a step of fewer tokens than the cold run's whole prompt, and without
// --batch-invariant a GEMM's summation order may depend on its row count (M): on stories260K
// with one rank of 2 threads every logprob differs from the cold run's in its last bits (by
// 7e-6 at most when measured), the greedy tokens do not. So greedy tokens must be equal and
// logprobs close; with --batch-invariant they must be bitwise equal.
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/runtime/scheduler.h"
#include "model_fixtures.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

struct Generated {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // per token: the chosen one's, then the top 3
  int32_t cached_tokens = -1;
  std::string error;
};

Generated generate(Scheduler& s, const std::vector<int32_t>& prompt, int32_t max_tokens) {
  std::mutex mu;
  std::condition_variable cv;
  Generated g;
  bool finished = false;
  EngineRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.logprobs = 3;
  r.on_output = [&](const RequestOutput& o) {
    std::lock_guard<std::mutex> lock(mu);
    g.tokens.insert(g.tokens.end(), o.tokens.begin(), o.tokens.end());
    for (const TokenLogprob& lp : o.logprobs) {
      g.logprobs.push_back(lp.logprob);
      for (const auto& t : lp.top) g.logprobs.push_back(t.logprob);
    }
    g.error += o.error;
    g.cached_tokens = o.cached_tokens;
    finished = o.finished;
    cv.notify_all();
  };
  s.submit(std::move(r));
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished; }));
  return g;
}

// Tokens of ordinary pieces (ids from 259 on in a llama2.c vocabulary), varied by `salt`.
std::vector<int32_t> some_tokens(int n, int salt, int vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(259 + (i * 37 + salt * 101) % (vocab - 259));
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

enum class Equal { Bitwise, GreedyAndClose };

// Runs `first` then `second` (sharing a long prefix) on a warm scheduler, and `second` on a
// cold one; compares `second`'s outputs.
void expect_hit_equals_cold(const Model& model, SchedulerOptions o, Equal how) {
  const int vocab = model.config.vocab_size;
  const auto shared = some_tokens(100, 1, vocab);  // 6 full blocks and 4 tokens
  const auto first = concat(shared, some_tokens(30, 2, vocab));
  const auto second = concat(shared, some_tokens(21, 3, vocab));
  o.enable_prefix_caching = false;
  Generated cold;
  {
    Scheduler s(model, o);
    cold = generate(s, second, 12);
  }
  o.enable_prefix_caching = true;
  Scheduler s(model, o);
  const Generated a = generate(s, first, 12);
  const Generated warm = generate(s, second, 12);
  ASSERT_TRUE(cold.error.empty() && a.error.empty() && warm.error.empty())
      << cold.error << a.error << warm.error;
  EXPECT_EQ(a.cached_tokens, 0);
  EXPECT_EQ(warm.cached_tokens, 96);
  EXPECT_EQ(cold.cached_tokens, 0);
  ASSERT_EQ(warm.tokens, cold.tokens);
  ASSERT_EQ(warm.logprobs.size(), cold.logprobs.size());
  for (size_t j = 0; j < cold.logprobs.size(); ++j) {
    if (how == Equal::Bitwise)
      ASSERT_EQ(std::bit_cast<uint32_t>(warm.logprobs[j]),
                std::bit_cast<uint32_t>(cold.logprobs[j]))
          << "logprob " << j << ": " << warm.logprobs[j] << " vs " << cold.logprobs[j];
    else
      ASSERT_NEAR(warm.logprobs[j], cold.logprobs[j], 1e-3) << "logprob " << j;
  }
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.prefix_cache_hits, 96u);
  EXPECT_EQ(st.prefix_cache_queries, first.size() + second.size());
}

class PrefixCachingStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::data_dir())) return;
    model_ = load_model(test::stories_load_options()).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  static SchedulerOptions options(const std::string& config, bool batch_invariant) {
    SchedulerOptions o;
    o.prefill_config = topotree::parse_service_config(config);
    o.batch_invariant = batch_invariant;
    o.max_model_len = 256;
    return o;
  }
  static inline Model* model_ = nullptr;
};

TEST_F(PrefixCachingStories, AHitGivesTheColdRunsGreedyTokens) {
  expect_hit_equals_cold(*model_, options("1x2", false), Equal::GreedyAndClose);
}

TEST_F(PrefixCachingStories, BatchInvariantAHitIsBitwiseTheColdRun) {
  expect_hit_equals_cold(*model_, options("1x2", true), Equal::Bitwise);
}

// The scheduler's cache is bookkeeping in this process; the ranks read the shared blocks.
TEST_F(PrefixCachingStories, TwoRanksAHitIsBitwiseTheColdRun) {
  expect_hit_equals_cold(*model_, options("2x1", true), Equal::Bitwise);
}

TEST_F(PrefixCachingStories, TwoRanksAHitGivesTheColdRunsGreedyTokens) {
  expect_hit_equals_cold(*model_, options("2x1", false), Equal::GreedyAndClose);
}

// BF16 weights, whose GEMMs differ most between their M-dependent schedules.
void expect_bf16_hit_equals_cold(bool batch_invariant, Equal how) {
  test::TempDir dir;
  test::write_llama_config(dir.path(), {256, 2, 4, 2, 704, 1000, 256},
                           {{"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}});
  LoadOptions lo = test::dummy_weights(dir.path(), WeightDType::BF16);
  lo.threads = 2;
  const auto model = load_model(lo);
  SchedulerOptions o;
  o.prefill_config = topotree::parse_service_config("1x2");
  o.batch_invariant = batch_invariant;
  expect_hit_equals_cold(*model, o, how);
}

TEST(PrefixCachingBf16, BatchInvariantAHitIsBitwiseTheColdRun) {
  expect_bf16_hit_equals_cold(true, Equal::Bitwise);
}

TEST(PrefixCachingBf16, AHitGivesTheColdRunsGreedyTokens) {
  expect_bf16_hit_equals_cold(false, Equal::GreedyAndClose);
}

}  // namespace
}  // namespace sandwich::engine
