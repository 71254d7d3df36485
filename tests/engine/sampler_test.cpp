#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/sampler.h"

namespace sandwich::engine {
namespace {

std::vector<float> logits_from_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

std::map<int32_t, int> histogram(const SamplingParams& sp, const std::vector<float>& logits,
                                 int n) {
  Sampler s(sp, static_cast<int32_t>(logits.size()), 42);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) {
    auto l = logits;
    ++h[s.sample(l.data(), {}, {})];
  }
  return h;
}

TEST(Sampler, GreedyTakesTheFirstMaximum) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, 5, 1);
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(l.data(), {}, {}), 1);
}

TEST(Sampler, TemperatureSamplingFollowsTheDistribution) {
  SamplingParams p;
  p.seed = 7;
  auto h = histogram(p, logits_from_probs({0.5, 0.3, 0.2}), 20000);
  EXPECT_NEAR(h[0] / 20000.0, 0.5, 0.02);
  EXPECT_NEAR(h[1] / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(h[2] / 20000.0, 0.2, 0.02);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.seed = 1234;
  std::vector<float> base(1000);
  for (int i = 0; i < 1000; ++i) base[i] = std::sin(i * 0.37f) * 3;
  Sampler a(p, 1000, 1), b(p, 1000, 999);
  for (int i = 0; i < 50; ++i) {
    auto la = base, lb = base;
    EXPECT_EQ(a.sample(la.data(), {}, {}), b.sample(lb.data(), {}, {}));
  }
}

// A cut that keeps only ids 1 and 3 of {0.1, 0.4, 0.05, 0.35, 0.1}.
struct TwoBestCut {
  const char* name;
  SamplingParams params;
};

class SamplerCut : public ::testing::TestWithParam<TwoBestCut> {};

TEST_P(SamplerCut, KeepsOnlyTheTwoMostLikely) {
  auto h = histogram(GetParam().params, logits_from_probs({0.1, 0.4, 0.05, 0.35, 0.1}), 5000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[3], 0);
  EXPECT_NEAR(h[1] / 5000.0, 0.4 / 0.75, 0.03);
}

// Top-k keeps the k best; top-p the smallest nucleus (sorted: 0.4 (id 1), 0.35 (id 3) -> 0.75
// reached with two tokens).
INSTANTIATE_TEST_SUITE_P(Sampler, SamplerCut,
                         ::testing::Values(TwoBestCut{"TopK", {.top_k = 2, .seed = 3}},
                                           TwoBestCut{"TopP", {.top_p = 0.75f, .seed = 5}}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Sampler, TopPOverALargeVocabularyWidensPastTheFirstBlock) {
  SamplingParams p;
  p.top_p = 0.99f;
  p.seed = 9;
  std::vector<float> flat(50000, 0.0f);  // uniform: the nucleus needs 49500 tokens
  auto h = histogram(p, flat, 2000);
  int high = 0;
  for (auto& [t, n] : h) high += t >= 1024;
  EXPECT_GT(high, 1500);
}

// The cuts run as partitions, not sorts: check them against a full sort of the vocabulary.
TEST(Sampler, CombinedCutsKeepExactlyTheSortedReferenceSet) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> logits(5000);
  for (auto& l : logits) l = std::round(nd(g) * 8) / 8;  // many ties
  const SamplingParams p{
      .temperature = 0.7f, .top_k = 700, .top_p = 0.8f, .min_p = 0.002f, .seed = 3};
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const double mx = logits[order[0]];
  auto w = [&](int32_t t) { return std::exp((logits[t] - mx) / p.temperature); };
  double z = 0;
  for (int i = 0; i < p.top_k; ++i) z += w(order[i]);
  std::set<int32_t> keep;
  double cum = 0;
  for (int i = 0; i < p.top_k; ++i) {
    if (w(order[i]) < p.min_p) break;
    keep.insert(order[i]);
    if ((cum += w(order[i])) >= p.top_p * z) break;
  }
  ASSERT_GT(keep.size(), 20u);
  auto h = histogram(p, logits, 4000);
  for (auto& [t, n] : h)
    EXPECT_TRUE(keep.count(t)) << "token " << t << " is outside the reference set";
  EXPECT_GT(h.size(), keep.size() / 2);
}

TEST(Sampler, LogitBiasBansAndForces) {
  SamplingParams p;
  p.seed = 4;
  p.logit_bias = {{0, -100.0f}, {2, 100.0f}};
  auto h = histogram(p, logits_from_probs({0.9, 0.05, 0.05}), 500);
  EXPECT_EQ(h[2], 500);
  p.logit_bias = {{7, 1.0f}};
  EXPECT_THROW(Sampler(p, 3, 1), std::invalid_argument);  // outside the vocabulary
  p.logit_bias = {{1, 101.0f}};
  EXPECT_THROW(Sampler(p, 3, 1), std::invalid_argument);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.min_p = 0.5f;
  p.seed = 11;
  auto h = histogram(p, logits_from_probs({0.1, 0.4, 0.05, 0.3, 0.15}), 3000);
  EXPECT_EQ(h.size(), 2u);  // 0.4 and 0.3 (>= 0.2)
}

TEST(Sampler, PenaltiesFollowTheApiRules) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p, 4, 1);
  std::vector<float> l = {2.0f, -1.0f, 1.0f, 0.0f};
  std::vector<int32_t> prompt = {0};
  std::vector<int32_t> output = {1, 1, 2};
  s.sample(l.data(), prompt, output);
  EXPECT_FLOAT_EQ(l[0], 1.0f);                      // prompt token: 2 / 2
  EXPECT_FLOAT_EQ(l[1], -2.0f - 0.5f - 2 * 0.25f);  // -1 * 2, then presence and 2x frequency
  EXPECT_FLOAT_EQ(l[2], 0.5f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[3], 0.0f);
}

TEST(Sampler, RejectsOutOfRangeParameters) {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    EXPECT_THROW(p.validate(), std::invalid_argument);
  };
  bad([](SamplingParams& p) { p.temperature = -1; });
  bad([](SamplingParams& p) { p.temperature = NAN; });
  bad([](SamplingParams& p) { p.top_p = 0; });
  bad([](SamplingParams& p) { p.top_p = 1.5f; });
  bad([](SamplingParams& p) { p.min_p = -0.1f; });
  bad([](SamplingParams& p) { p.top_k = -5; });
  bad([](SamplingParams& p) { p.repetition_penalty = 0; });
  bad([](SamplingParams& p) { p.presence_penalty = 3; });
  bad([](SamplingParams& p) { p.frequency_penalty = -2.5f; });
}

TEST(Sampler, Logprobs) {
  std::vector<float> l = logits_from_probs({0.5, 0.25, 0.25});
  EXPECT_NEAR(Sampler::logprob_of(l.data(), 3, 0), std::log(0.5), 1e-6);
  auto top = Sampler::top_logprobs(l.data(), 3, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].token, 0);
  EXPECT_EQ(top[1].token, 1);  // ties broken by lower id
  EXPECT_NEAR(top[1].logprob, std::log(0.25), 1e-6);
}

}  // namespace
}  // namespace sandwich::engine
