// A token constraint (a grammar) in every sampling mode: only allowed tokens come out, the
// distribution among them is the model's renormalised, greedy asks one token before masking,
// and a constraint that allows nothing gives -1.
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/sampler.h"

namespace sandwich::engine {
namespace {

// Allows a fixed set of tokens; counts how it was asked.
class SetConstraint final : public TokenConstraint {
 public:
  explicit SetConstraint(std::set<int32_t> allowed) : allowed_(std::move(allowed)) {}
  bool allows(int32_t t) override {
    ++asks;
    return allowed_.count(t) > 0;
  }
  void mask(float* logits, int32_t n) override {
    ++masks;
    for (int32_t i = 0; i < n; ++i)
      if (!allowed_.count(i)) logits[i] = -std::numeric_limits<float>::infinity();
  }
  int asks = 0, masks = 0;

 private:
  std::set<int32_t> allowed_;
};

std::vector<float> ramp(int n) {
  std::vector<float> l(n);
  for (int i = 0; i < n; ++i) l[i] = 0.01f * static_cast<float>(i % 97) - 0.3f * (i % 5);
  return l;
}

TEST(SamplerConstraint, GreedyChecksItsChoiceBeforeMasking) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, 8, 1);
  std::vector<float> l = {0, 5, 1, 2, 0, 0, 0, 0};
  SetConstraint ok({1, 3});
  EXPECT_EQ(s.sample(l.data(), {}, {}, &ok), 1);
  EXPECT_EQ(ok.masks, 0) << "an allowed argmax needs no mask";
  l = {0, 5, 1, 2, 0, 0, 0, 0};
  SetConstraint other({2, 3});
  EXPECT_EQ(s.sample(l.data(), {}, {}, &other), 3);
  EXPECT_EQ(other.masks, 1);
  l = {0, 5, 1, 2, 0, 0, 0, 0};
  SetConstraint none({});
  EXPECT_EQ(s.sample(l.data(), {}, {}, &none), -1);
}

struct Cut {
  float temperature, top_p, min_p;
  int32_t top_k;
};

class SamplerConstraintCut : public testing::TestWithParam<Cut> {};

TEST_P(SamplerConstraintCut, OnlyAllowedTokensComeOut) {
  const Cut c = GetParam();
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.top_k = c.top_k;
  const int V = 1000;
  // Odd tokens and a few unlikely ones: cuts applied before the mask would leave nothing.
  std::set<int32_t> allowed;
  for (int i = 1; i < V; i += 2) allowed.insert(i);
  Sampler s(p, V, 7);
  SetConstraint con(allowed);
  for (int i = 0; i < 300; ++i) {
    auto l = ramp(V);
    const int32_t t = s.sample(l.data(), {}, {}, &con);
    ASSERT_TRUE(allowed.count(t)) << "token " << t;
  }
  auto l = ramp(V);
  SetConstraint none({});
  EXPECT_EQ(s.sample(l.data(), {}, {}, &none), -1);
}

INSTANTIATE_TEST_SUITE_P(Modes, SamplerConstraintCut,
                         testing::Values(Cut{0.0f, 1.0f, 0.0f, 0}, Cut{1.0f, 1.0f, 0.0f, 0},
                                         Cut{0.7f, 0.9f, 0.0f, 0}, Cut{1.0f, 1.0f, 0.0f, 5},
                                         Cut{1.3f, 1.0f, 0.2f, 0}, Cut{1.0f, 0.5f, 0.1f, 40}));

TEST(SamplerConstraint, TheDistributionAmongAllowedTokensIsRenormalised) {
  SamplingParams p;  // temperature 1, no cut
  std::vector<float> base = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  Sampler s(p, 4, 3);
  SetConstraint con({1, 3});  // 0.3 : 0.05 -> 6/7 : 1/7
  std::map<int32_t, int> h;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    auto l = base;
    ++h[s.sample(l.data(), {}, {}, &con)];
  }
  EXPECT_EQ(h.size(), 2u);
  EXPECT_NEAR(h[1] / double(n), 6.0 / 7.0, 0.015);
  EXPECT_NEAR(h[3] / double(n), 1.0 / 7.0, 0.015);
}

}  // namespace
}  // namespace sandwich::engine
