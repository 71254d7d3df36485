#include "tuner/kendall_tau.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sandwich::tuner {
namespace {

TEST(KendallTau, SameOrderIsOneAndReversedIsMinusOne) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
}

TEST(KendallTau, OneSwapOfFourAndTies) {
  // 6 pairs, one discordant: (5 - 1) / 6.
  EXPECT_NEAR(kendall_tau({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6, 1e-12);
  // tau-b: a tie in one ranking only counts against the agreement's scale.
  EXPECT_NEAR(kendall_tau({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(2.0 * 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(kendall_tau({}, {}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({5, 5}, {1, 1}), 1.0);
}

}  // namespace
}  // namespace sandwich::tuner
