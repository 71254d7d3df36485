#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/elementwise.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float rel,
                  float abs_tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], abs_tol + rel * std::abs(b[i])) << "at " << i;
}

class ElementwiseSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(ElementwiseSizes, RmsnormMatchesReference) {
  const int64_t n = GetParam();
  auto x = test::random_normal(n, 1, 3.0f), w = test::random_normal(n, 2);
  std::vector<float> y(n), r(n);
  rmsnorm(x.data(), w.data(), y.data(), n, 1e-5f);
  rmsnorm_ref(x.data(), w.data(), r.data(), n, 1e-5f);
  expect_close(y, r, 1e-5f, 1e-6f);
  // In place.
  rmsnorm(x.data(), w.data(), x.data(), n, 1e-5f);
  expect_close(x, r, 1e-5f, 1e-6f);
}

TEST_P(ElementwiseSizes, SoftmaxMatchesReferenceAndSumsToOne) {
  const int64_t n = GetParam();
  auto x = test::random_normal(n, 3, 5.0f);
  auto r = x;
  softmax(x.data(), n);
  softmax_ref(r.data(), n);
  expect_close(x, r, 1e-5f, 1e-7f);
  double sum = 0;
  for (float v : x) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST_P(ElementwiseSizes, SiluMulMatchesReference) {
  const int64_t n = GetParam();
  auto g = test::random_normal(n, 4, 4.0f), u = test::random_normal(n, 5);
  std::vector<float> y(n), r(n);
  silu_mul(g.data(), u.data(), y.data(), n);
  silu_mul_ref(g.data(), u.data(), r.data(), n);
  expect_close(y, r, 1e-5f, 1e-7f);
}

TEST_P(ElementwiseSizes, AddInplace) {
  const int64_t n = GetParam();
  auto a = test::random_normal(n, 6), b = test::random_normal(n, 7);
  auto expect = a;
  for (int64_t i = 0; i < n; ++i) expect[i] += b[i];
  add_inplace(a.data(), b.data(), n);
  EXPECT_EQ(a, expect);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseSizes,
                         ::testing::Values(1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 768,
                                           4099));

TEST(Elementwise, ExpIsAccurateOverTheRange) {
  std::vector<float> x;
  for (float v = -100.0f; v <= 90.0f; v += 0.37f) x.push_back(v);
  x.push_back(0.0f);
  x.push_back(-87.0f);
  auto y = x;
  exp_inplace(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::exp(static_cast<double>(x[i]));
    if (e > 3.4e38) {
      EXPECT_TRUE(std::isinf(y[i]) || y[i] > 1e38f) << x[i];
    } else if (e < 1e-37) {
      EXPECT_LE(y[i], 1e-37f) << x[i];
    } else {
      EXPECT_NEAR(y[i], e, 4e-7 * e) << x[i];
    }
  }
}

TEST(Elementwise, SoftmaxHandlesLargeAndEqualValues) {
  std::vector<float> x = {1000.0f, 1000.0f, -1000.0f};
  softmax(x.data(), 3);
  EXPECT_NEAR(x[0], 0.5f, 1e-6f);
  EXPECT_NEAR(x[1], 0.5f, 1e-6f);
  EXPECT_EQ(x[2], 0.0f);
}

class RopeShapes : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(RopeShapes, MatchesReference) {
  auto [heads, hd] = GetParam();
  auto x = test::random_normal(int64_t{heads} * hd, 8);
  auto r = x;
  std::vector<float> cs(hd / 2), sn(hd / 2);
  for (int i = 0; i < hd / 2; ++i) {
    const double a = 37 * std::pow(10000.0, -2.0 * i / hd);
    cs[i] = static_cast<float>(std::cos(a));
    sn[i] = static_cast<float>(std::sin(a));
  }
  rope(x.data(), heads, hd, cs.data(), sn.data());
  rope_ref(r.data(), heads, hd, cs.data(), sn.data());
  expect_close(x, r, 1e-6f, 1e-6f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RopeShapes,
                         ::testing::Values(std::pair{1, 2}, std::pair{3, 8}, std::pair{8, 64},
                                           std::pair{2, 34}, std::pair{32, 128}, std::pair{1, 96},
                                           std::pair{2, 18}, std::pair{1, 6}));

}  // namespace
}  // namespace sandwich::kernels
