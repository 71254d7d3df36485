// The GEMM driver against the plain reference, on random and edge shapes, with every epilogue,
// shard and explicit schedule.
//
// Tolerances. F32 weights: only the summation order differs from the double reference, so
// |err| <= 1e-4 * sqrt(k) for N(0,1) data. BF16 weights: the activations are rounded to BF16
// (as llama.cpp and oneDNN do) and the products summed in F32; with BF16-exact activations the
// F32 bound holds, and with arbitrary activations the result is within 2^-8 * sum |x w| of the
// unrounded product (one BF16 rounding of each x).
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "random_values.h"
#include "random_weights.h"

namespace sandwich::kernels {
namespace {

using Weights = test::RandomWeights;
using test::random_weights;

std::vector<float> random_x(int64_t m, int64_t k, uint32_t seed, bool bf16_exact) {
  return test::random_normal(static_cast<size_t>(m * k), seed, 1.0f, bf16_exact);
}

double tolerance(int64_t k) {
  return 1e-4 * std::sqrt(static_cast<double>(k)) + 1e-5;
}

struct Case {
  int64_t m, n, k;
  DType dt;
  int threads;
};

class GemmCases : public ::testing::TestWithParam<Case> {};

TEST_P(GemmCases, MatchesReferenceWithEveryEpilogueAndShard) {
  const Case c = GetParam();
  const Weights W = random_weights(c.n, c.k, c.dt, 7);
  const auto x = random_x(c.m, c.k, 9, true);
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  gemm_ref(x.data(), c.k, W.w.data(), c.k, c.m, c.n, c.k, ref.data(), c.n);
  ThreadTeam team(c.threads);
  const double tol = tolerance(c.k);

  // Store, into a wider y (ldy > n): columns past n stay untouched.
  const int64_t ldy = c.n + 5;
  std::vector<float> y(static_cast<size_t>(c.m * ldy), -7.0f);
  GemmArgs a{x.data(), c.k, c.m, y.data(), ldy};
  gemm(W.pw, a, team);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j)
      ASSERT_NEAR(y[i * ldy + j], ref[i * c.n + j], tol) << i << "," << j;
    for (int64_t j = c.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], -7.0f);
  }
  // Accumulate (the residual add).
  a.epilogue = Epilogue::Accumulate;
  gemm(W.pw, a, team);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) ASSERT_NEAR(y[i * ldy + j], 2 * ref[i * c.n + j], 2 * tol);
  // A column shard starting on a panel, and a K shard of odd width: x holds only its columns.
  if (c.n > kPanel && c.k > 4) {
    const int64_t n0 = shard_granularity_n(W.pw), k0 = 2, k1 = c.k - 1;
    std::vector<float> xs(static_cast<size_t>(c.m * (k1 - k0)));
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t t = k0; t < k1; ++t) xs[i * (k1 - k0) + t - k0] = x[i * c.k + t];
    std::vector<float> ys(static_cast<size_t>(c.m * (c.n - n0)));
    GemmArgs s{xs.data(), k1 - k0, c.m, ys.data(), c.n - n0, n0, c.n, k0, k1};
    gemm(W.pw, s, team);
    std::vector<float> rs(ys.size());
    gemm_ref(xs.data(), k1 - k0, W.w.data() + n0 * c.k + k0, c.k, c.m, c.n - n0, k1 - k0, rs.data(),
             c.n - n0);
    for (size_t i = 0; i < ys.size(); ++i) ASSERT_NEAR(ys[i], rs[i], tol) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmCases,
    ::testing::Values(Case{1, 64, 64, DType::F32, 1}, Case{1, 64, 64, DType::BF16, 1},
                      Case{1, 1, 1, DType::F32, 1}, Case{1, 1, 1, DType::BF16, 2},
                      Case{1, 1000, 333, DType::BF16, 2}, Case{1, 1000, 333, DType::F32, 2},
                      Case{3, 97, 72, DType::F32, 2}, Case{3, 97, 72, DType::BF16, 2},
                      Case{37, 200, 97, DType::F32, 2}, Case{37, 200, 97, DType::BF16, 2},
                      Case{7, 130, 301, DType::BF16, 1}, Case{129, 256, 640, DType::BF16, 2},
                      Case{129, 256, 640, DType::F32, 1}, Case{2, 4096, 512, DType::BF16, 2},
                      Case{16, 384, 1000, DType::BF16, 2}, Case{64, 192, 3000, DType::F32, 2},
                      Case{5, 64, 4099, DType::BF16, 2}, Case{200, 130, 33, DType::BF16, 2},
                      Case{31, 65, 1, DType::BF16, 1}),
    [](const auto& i) {
      const Case& c = i.param;
      return std::string(dtype_name(c.dt)) + "_m" + std::to_string(c.m) + "_n" +
             std::to_string(c.n) + "_k" + std::to_string(c.k) + "_t" + std::to_string(c.threads);
    });

TEST(Gemm, Bf16RoundsActivationsOnceWithinTheStatedBound) {
  const int64_t m = 9, n = 100, k = 513;
  const Weights W = random_weights(n, k, DType::BF16, 21);
  const auto x = random_x(m, k, 22, false);
  std::vector<float> y(m * n), ref(m * n);
  gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
  ThreadTeam team(2);
  gemm(W.pw, GemmArgs{x.data(), k, m, y.data(), n}, team);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double mag = 0;
      for (int64_t t = 0; t < k; ++t) mag += std::fabs(x[i * k + t] * W.w[j * k + t]);
      ASSERT_NEAR(y[i * n + j], ref[i * n + j], mag / 256 + tolerance(k)) << i << "," << j;
    }
}

TEST(Gemm, SiluMulOfTheGateUpPair) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int threads : {1, 2})
      for (auto [m, n, k, n0] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{11, 150, 96, 0},
                                 {1, 300, 70, 64},
                                 {40, 256, 200, 128}}) {
        const Weights G = random_weights(n, k, dt, 1), U = random_weights(n, k, dt, 2);
        const auto x = random_x(m, k, 3, true);
        const int64_t cols = n - n0;
        std::vector<float> g(m * n), u(m * n), y(m * cols, -1.0f);
        gemm_ref(x.data(), k, G.w.data(), k, m, n, k, g.data(), n);
        gemm_ref(x.data(), k, U.w.data(), k, m, n, k, u.data(), n);
        ThreadTeam team(threads);
        gemm_silu_mul(G.pw, U.pw, GemmArgs{x.data(), k, m, y.data(), cols, n0, n}, team);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            const float gv = g[i * n + n0 + j], uv = u[i * n + n0 + j];
            ASSERT_NEAR(y[i * cols + j], gv / (1 + std::exp(-gv)) * uv,
                        1e-3 * (1 + std::fabs(gv * uv)))
                << dtype_name(dt) << " m=" << m << " " << i << "," << j;
          }
      }
}

// Explicit schedules: every tile shape of every ISA this CPU runs, with slices that cut M, N and
// K into uneven blocks, and every thread grid including split-k, with both epilogues.
TEST(Gemm, EveryScheduleGivesTheSameResult) {
  const int64_t m = 13, n = 192 + 37, k = 301;
  for (DType dt : {DType::F32, DType::BF16}) {
    const Weights W = random_weights(n, k, dt, 4);
    const auto x = random_x(m, k, 5, true);
    std::vector<float> ref(m * n);
    gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
    ThreadTeam team(2);
    int tried = 0;
    for (const MicroKernel& mk : microkernel_table()) {
      if (mk.weights != dt || !cpu_has(mk.isa)) continue;
      // bk 64: several K blocks summed in a slice buffer; 1024: one block, stored into y directly.
      for (auto [tm, tn, tk, bk] :
           {std::tuple{1, 2, 1, 64}, std::tuple{2, 1, 1, 64}, std::tuple{1, 1, 2, 64},
            std::tuple{1, 2, 1, 1024}, std::tuple{1, 1, 2, 1024}}) {
        Schedule s;
        s.isa = mk.isa;
        s.um = mk.um;
        s.un = mk.un;
        s.bm = mk.um * (mk.um == 1 ? 5 : 1);
        s.bn = 128;
        s.bk = bk;
        s.tm = tm;
        s.tn = tn;
        s.tk = tk;
        s.prefetch = (mk.um + tm) % 2 == 0;
        std::vector<float> y(m * n, 0.5f);
        const GemmArgs a{x.data(), k, m, y.data(), n, 0, -1, 0, -1, Epilogue::Accumulate};
        gemm(W.pw, a, team, &s);
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(y[i], ref[i] + 0.5f, tolerance(k))
              << mk.name() << " " << s.to_string() << " at " << i;
        ++tried;
      }
    }
    EXPECT_GE(tried, 20);  // 4 scalar tile heights x 5 grids and blocks at least
  }
}

// A team of one runs a schedule made for two threads' worth of rows, and threads beyond the
// work (more threads than panels) stay idle.
TEST(Gemm, MoreThreadsThanWork) {
  const Weights W = random_weights(64, 40, DType::BF16, 8);
  const auto x = random_x(1, 40, 9, true);
  std::vector<float> y(64), ref(64);
  gemm_ref(x.data(), 40, W.w.data(), 40, 1, 64, 40, ref.data(), 64);
  ThreadTeam team(3);
  gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 64}, team);
  for (int j = 0; j < 64; ++j) ASSERT_NEAR(y[j], ref[j], tolerance(40));
}

TEST(Gemm, RejectsBadArguments) {
  const Weights W = random_weights(100, 40, DType::BF16, 1);
  std::vector<float> x(40), y(100);
  ThreadTeam team(1);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 10, 100}, team),
               std::invalid_argument);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 0, 200}, team),
               std::invalid_argument);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 0, -1, 3, 40}, team),
               std::invalid_argument);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 10, 1, y.data(), 100}, team),
               std::invalid_argument);  // ldx < k
  Schedule bad = default_schedule({1, 100, 40, DType::BF16, 1});
  bad.tn = 3;
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100}, team, &bad),
               std::invalid_argument);
  bad = default_schedule({1, 100, 40, DType::BF16, 1});
  bad.bk = 3;
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100}, team, &bad),
               std::invalid_argument);
  bad.bk = 64;
  bad.um = 7;
  bad.un = 64;
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100}, team, &bad),
               std::invalid_argument);
  PackedWeight nodata = W.pw;
  nodata.data = nullptr;
  EXPECT_THROW(gemm(nodata, GemmArgs{x.data(), 40, 1, y.data(), 100}, team), std::invalid_argument);
  const Weights U = random_weights(100, 42, DType::BF16, 2);
  EXPECT_THROW(gemm_silu_mul(W.pw, U.pw, GemmArgs{x.data(), 40, 1, y.data(), 100}, team),
               std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::kernels
