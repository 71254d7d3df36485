#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kernels/attention_tunables.h"
#include "kernels/kernel_tunables.h"
#include "tuner/attention_tuning.h"
#include "tuner/tunable_kernel.h"

namespace sandwich::tuner {
namespace {

// A kernel that never runs: the fake clock below answers for it.
class FakeKernel : public TunableKernel {
 public:
  std::string name() const override { return "fake"; }
  KernelParams key() const override { return {{"size", 7}}; }
  int64_t max_m() const override { return 64; }
  std::vector<TunableDim> space(int64_t) const override {
    return {{"a", 1, 64, 4}, {"b", 1, b_hi, 1}};
  }
  void run(int64_t, const KernelParams&) override { ++runs; }
  int64_t b_hi = 16;
  int runs = 0;
};

// Fastest at a = 8, b = 4; every parameter set asked is recorded.
struct FakeClock {
  std::set<KernelParams> asked;
  double operator()(TunableKernel&, int64_t, const KernelParams& p) {
    asked.insert(p);
    return 1 + std::abs(std::log2(double(p.at("a"))) - 3) +
           std::abs(std::log2(double(p.at("b"))) - 2);
  }
};

TEST(TunableKernel, GrowsWhileItGainsAndRollsBack) {
  FakeKernel k;
  FakeClock fc;
  KernelSearchStats st;
  const engine::TunedKernel t = search_kernel(
      k, [&](TunableKernel& kk, int64_t m, const KernelParams& p) { return fc(kk, m, p); },
      {.max_m = 1, .min_gain = 0.01, .reuse_after = 3}, {}, {}, &st);
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.kernel, "fake");
  EXPECT_EQ(t.key, k.key());
  EXPECT_EQ(t.ranges[0].params, (KernelParams{{"a", 8}, {"b", 4}}));
  EXPECT_EQ(t.ranges[0].how, "searched");
  EXPECT_DOUBLE_EQ(t.ranges[0].seconds, 1.0);
  // a = 16 and b = 8 were tried and rolled back; nothing past them.
  EXPECT_TRUE(fc.asked.count({{"a", 16}, {"b", 1}}));
  EXPECT_TRUE(fc.asked.count({{"a", 8}, {"b", 8}}));
  EXPECT_FALSE(fc.asked.count({{"a", 32}, {"b", 1}}));
  EXPECT_FALSE(fc.asked.count({{"a", 8}, {"b", 16}}));
  // Every set once, the winner and the defaults once more.
  EXPECT_EQ(st.measured, static_cast<int64_t>(fc.asked.size()) + 2);
}

TEST(TunableKernel, RespectsBounds) {
  FakeKernel k;
  k.b_hi = 2;
  FakeClock fc;
  const engine::TunedKernel t = search_kernel(
      k, [&](TunableKernel& kk, int64_t m, const KernelParams& p) { return fc(kk, m, p); },
      {.max_m = 1});
  EXPECT_EQ(t.ranges[0].params, (KernelParams{{"a", 8}, {"b", 2}}));
  for (const KernelParams& p : fc.asked) {
    EXPECT_LE(p.at("b"), 2);
    EXPECT_LE(p.at("a"), 64);
  }
}

TEST(TunableKernel, ReusesAStableWinnerAndCoversEveryM) {
  FakeKernel k;
  FakeClock fc;
  KernelSearchStats st;
  const engine::TunedKernel t = search_kernel(
      k, [&](TunableKernel& kk, int64_t m, const KernelParams& p) { return fc(kk, m, p); },
      {.max_m = 48, .reuse_after = 3}, {}, {}, &st);
  // M grid 1, 2, 4, 8, 16, 32, 48: three searched, the rest reused.
  ASSERT_EQ(t.ranges.size(), 7u);
  EXPECT_EQ(st.searched_m, 3);
  EXPECT_EQ(st.reused_m, 4);
  int64_t next = 1;
  for (const engine::TunedKernelRange& r : t.ranges) {
    EXPECT_EQ(r.m_lo, next);
    next = r.m_hi + 1;
    EXPECT_EQ(r.params, (KernelParams{{"a", 8}, {"b", 4}}));
  }
  EXPECT_EQ(next, 49);
  EXPECT_EQ(t.ranges.back().how, "reused");
  EXPECT_EQ(t.ranges.back().seconds, 0);
}

TEST(TunableKernel, KeepsTheDefaultsUnlessBeaten) {
  FakeKernel k;
  // Everything equally fast: the defaults stay.
  const engine::TunedKernel t = search_kernel(
      k, [](TunableKernel&, int64_t, const KernelParams&) { return 1.0; }, {.max_m = 2});
  for (const engine::TunedKernelRange& r : t.ranges) {
    EXPECT_EQ(r.params, (KernelParams{{"a", 4}, {"b", 1}}));
    EXPECT_EQ(r.how, "default");
  }
}

TEST(TunableKernel, ANoisyFirstTimeDoesNotReplaceTheDefaults) {
  FakeKernel k;
  int default_calls = 0;
  // All equally fast, but the defaults' first run met a neighbour's burst.
  const engine::TunedKernel t =
      search_kernel(k,
                    [&](TunableKernel&, int64_t, const KernelParams& p) {
                      const bool is_default = p == KernelParams{{"a", 4}, {"b", 1}};
                      return is_default && ++default_calls == 1 ? 2.0 : 1.0;
                    },
                    {.max_m = 1});
  EXPECT_EQ(t.ranges[0].params, (KernelParams{{"a", 4}, {"b", 1}}));
  EXPECT_EQ(t.ranges[0].how, "default");
  EXPECT_EQ(default_calls, 2);
}

TEST(TunableKernel, StopReturnsWhatIsFinished) {
  FakeKernel k;
  FakeClock fc;
  int calls = 0;
  const engine::TunedKernel t = search_kernel(
      k, [&](TunableKernel& kk, int64_t m, const KernelParams& p) { return fc(kk, m, p); },
      {.max_m = 64, .reuse_after = 0}, [&] { return ++calls > 12; });
  ASSERT_GE(t.ranges.size(), 1u);
  EXPECT_LT(t.ranges.size(), 7u);
  EXPECT_EQ(t.ranges[0].m_lo, 1);
}

TEST(TunableKernel, TimedRunsRunsTheKernel) {
  FakeKernel k;
  const double s = timed_runs({.warmup = 2, .min_reps = 3, .min_seconds = 0})(k, 1, {});
  EXPECT_GE(s, 0);
  EXPECT_EQ(k.runs, 5);
}

// The real kernels on a tiny shape with a tiny budget: valid, installable parameters.
TEST(AttentionTuning, TinyShapeGivesValidParams) {
  engine::ModelConfig c;
  c.head_dim = 16;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  AttentionTuneOptions o;
  o.max_decode_batch = 4;
  o.decode_context = 70;
  o.measure = {.warmup = 0, .min_reps = 1, .min_seconds = 0};
  KernelSearchStats st;
  int progress_calls = 0;
  const std::vector<engine::TunedKernel> tuned = tune_attention(
      c, 1, 1, 40, {}, [&](const KernelProgress&) { ++progress_calls; }, o, &st);
  ASSERT_EQ(tuned.size(), 2u);
  EXPECT_EQ(tuned[0].kernel, kernels::kAttentionPrefill);
  EXPECT_EQ(tuned[1].kernel, kernels::kAttentionDecode);
  EXPECT_GT(st.measured, 0);
  EXPECT_GE(progress_calls, 2);
  const auto key = kernels::attention_key(16, 2, 2, 1);
  kernels::clear_kernel_params();
  for (const engine::TunedKernel& t : tuned) {
    EXPECT_EQ(t.key, key);
    int64_t next = 1;
    for (const engine::TunedKernelRange& r : t.ranges) {
      EXPECT_EQ(r.m_lo, next);
      next = r.m_hi + 1;
      for (const auto& [name, v] : r.params) EXPECT_GE(v, 1) << name;
      if (t.kernel == kernels::kAttentionPrefill) {
        EXPECT_LE(r.params.at("q_chunk"), r.m_lo) << "a chunk no longer than the prompt";
        EXPECT_LE(r.params.at("pass_rows"), kernels::kMaxPassRows);
      }
      EXPECT_LE(r.params.at("kv_blocks"), kernels::kMaxStepBlocks);
      kernels::install_kernel_params(t.kernel, t.key, r.m_lo, r.m_hi, r.params);
    }
    EXPECT_EQ(next, (t.kernel == kernels::kAttentionPrefill ? 40 : 4) + 1);
  }
  // What the forward pass then runs.
  const engine::TunedKernelRange& r = tuned[0].ranges.back();
  const kernels::AttentionPlan plan = kernels::attention_prefill_plan(key, r.m_hi);
  EXPECT_EQ(kernels::attention_params_map(kernels::kAttentionPrefill, plan), r.params);
  kernels::clear_kernel_params();
  EXPECT_EQ(kernels::attention_prefill_plan(key, r.m_hi), kernels::AttentionPlan{});
}

}  // namespace
}  // namespace sandwich::tuner
