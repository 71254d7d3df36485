// Histogram buckets: they reach the request timeout, and lengths reach max_model_len.
#include "engine/runtime/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sandwich::engine {
namespace {

TEST(Metrics, LatencyBucketsReachPastTheRequestTimeout) {
  const auto b = latency_buckets();
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(b.front(), 0.001);
  EXPECT_GE(b.back(), 7680.0);
  EXPECT_GT(*std::upper_bound(b.begin(), b.end(), 600.0), 600.0);  // a bucket past 600 s
  const auto itl = inter_token_buckets();
  EXPECT_TRUE(std::is_sorted(itl.begin(), itl.end()));
  EXPECT_EQ(itl.back(), 60.0);
}

TEST(Metrics, LengthBucketsAreOneTwoFiveUpToTheMax) {
  EXPECT_EQ(length_buckets(1), (std::vector<double>{1}));
  EXPECT_EQ(length_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(length_buckets(2048),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}));
}

TEST(Metrics, HistogramCountsCumulatively) {
  Histogram h({1, 2});
  for (double v : {0.5, 1.0, 1.5, 3.0}) h.observe(v);
  const auto s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4}));  // le=1 counts 1.0 itself
  EXPECT_DOUBLE_EQ(s.sum, 6.0);
  EXPECT_EQ(s.count, 4u);
}

}  // namespace
}  // namespace sandwich::engine
