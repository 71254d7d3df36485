// The GEMM driver and every micro-kernel against plain references, on random and edge shapes.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

struct Weights {
  std::vector<float> w;  // n x k, values exactly representable in the storage type
  std::vector<uint8_t> buf;
  PackedWeight pw;
};

Weights make_weights(int64_t n, int64_t k, DType dt, uint32_t seed) {
  Weights r;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  r.w.resize(static_cast<size_t>(n * k));
  for (auto& v : r.w) v = dt == DType::BF16 ? bf16_to_f32(f32_to_bf16(nd(rng))) : nd(rng);
  r.pw = plan_packed_weight(n, k, dt);
  r.buf.assign(r.pw.bytes + 64, 0);
  r.pw.data = r.buf.data() + (64 - reinterpret_cast<uintptr_t>(r.buf.data()) % 64) % 64;
  pack_weight(r.pw, r.w.data(), DType::F32, k);
  return r;
}

std::vector<float> random_x(int64_t m, int64_t k, uint32_t seed, bool bf16_exact) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (auto& v : x) v = bf16_exact ? bf16_to_f32(f32_to_bf16(nd(rng))) : nd(rng);
  return x;
}

// Errors: F32 only reorders sums; BF16 rounds the activations too (exact here: x is BF16-exact).
double tolerance(int64_t k) { return 1e-4 * std::sqrt(static_cast<double>(k)) + 1e-5; }

struct Case {
  int64_t m, n, k;
  DType dt;
  int threads;
};

class GemmCases : public ::testing::TestWithParam<Case> {};

TEST_P(GemmCases, MatchesReferenceWithEveryEpilogueAndShard) {
  const Case c = GetParam();
  const Weights W = make_weights(c.n, c.k, c.dt, 7);
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
    for (int64_t j = 0; j < c.n; ++j) ASSERT_NEAR(y[i * ldy + j], ref[i * c.n + j], tol) << i << "," << j;
    for (int64_t j = c.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], -7.0f);
  }
  // Accumulate.
  a.epilogue = Epilogue::Accumulate;
  gemm(W.pw, a, team);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) ASSERT_NEAR(y[i * ldy + j], 2 * ref[i * c.n + j], 2 * tol);
  // A column shard starting on a panel, and a K shard: x holds only its columns.
  if (c.n > kPanel && c.k > 4) {
    const int64_t n0 = kPanel, k0 = 2, k1 = c.k - (c.k % 2 ? 1 : 2);
    std::vector<float> xs(static_cast<size_t>(c.m * (k1 - k0)));
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t t = k0; t < k1; ++t) xs[i * (k1 - k0) + t - k0] = x[i * c.k + t];
    std::vector<float> ys(static_cast<size_t>(c.m * (c.n - n0)));
    GemmArgs s{xs.data(), k1 - k0, c.m, ys.data(), c.n - n0, n0, c.n, k0, k1};
    gemm(W.pw, s, team);
    std::vector<float> rs(ys.size());
    gemm_ref(xs.data(), k1 - k0, W.w.data() + n0 * c.k + k0, c.k, c.m, c.n - n0, k1 - k0, rs.data(), c.n - n0);
    for (size_t i = 0; i < ys.size(); ++i) ASSERT_NEAR(ys[i], rs[i], tol) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmCases,
    ::testing::Values(Case{1, 64, 64, DType::F32, 1}, Case{1, 64, 64, DType::BF16, 1}, Case{1, 1, 1, DType::F32, 1},
                      Case{1, 1, 1, DType::BF16, 2}, Case{3, 97, 72, DType::F32, 2}, Case{3, 97, 72, DType::BF16, 2},
                      Case{37, 200, 97, DType::F32, 2}, Case{37, 200, 97, DType::BF16, 2},
                      Case{7, 130, 301, DType::BF16, 1}, Case{129, 256, 640, DType::BF16, 2},
                      Case{129, 256, 640, DType::F32, 2}, Case{2, 4096, 512, DType::BF16, 2},
                      Case{16, 384, 1000, DType::BF16, 2}, Case{64, 192, 3000, DType::F32, 2}, Case{5, 64, 4099, DType::BF16, 2}),
    [](const auto& i) {
      const Case& c = i.param;
      return std::string(dtype_name(c.dt)) + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" +
             std::to_string(c.k) + "_t" + std::to_string(c.threads);
    });

TEST(Gemm, SiluMulOfTheGateUpPair) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int threads : {1, 2}) {
      const int64_t m = 11, n = 150, k = 96;
      const Weights G = make_weights(n, k, dt, 1), U = make_weights(n, k, dt, 2);
      const auto x = random_x(m, k, 3, true);
      std::vector<float> g(m * n), u(m * n), y(m * n);
      gemm_ref(x.data(), k, G.w.data(), k, m, n, k, g.data(), n);
      gemm_ref(x.data(), k, U.w.data(), k, m, n, k, u.data(), n);
      ThreadTeam team(threads);
      gemm_silu_mul(G.pw, U.pw, GemmArgs{x.data(), k, m, y.data(), n}, team);
      for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(y[i], g[i] / (1 + std::exp(-g[i])) * u[i], 1e-3) << i;
    }
}

TEST(Gemm, EveryScheduleGivesTheSameResult) {
  // Explicit schedules: every tile shape of this CPU's ISA, slices and thread grids incl. split-k.
  const int64_t m = 13, n = 192, k = 300;
  for (DType dt : {DType::F32, DType::BF16}) {
    const Weights W = make_weights(n, k, dt, 4);
    const auto x = random_x(m, k, 5, true);
    std::vector<float> ref(m * n);
    gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
    ThreadTeam team(2);
    int tried = 0;
    for (const MicroKernel& mk : microkernel_table()) {
      if (mk.weights != dt || mk.isa != gemm_isa(dt)) continue;
      for (auto [tm, tn, tk] : {std::tuple{1, 2, 1}, std::tuple{2, 1, 1}, std::tuple{1, 1, 2}}) {
        Schedule s;
        s.isa = mk.isa;
        s.um = mk.um;
        s.un = mk.un;
        s.bm = 5;
        s.bn = 128;
        s.bk = 64;
        s.tm = tm;
        s.tn = tn;
        s.tk = tk;
        std::vector<float> y(m * n, 0.0f);
        gemm(W.pw, GemmArgs{x.data(), k, m, y.data(), n}, team, &s);
        for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(y[i], ref[i], tolerance(k)) << mk.name() << " " << s.to_string();
        ++tried;
      }
    }
    EXPECT_GT(tried, 10);
  }
}

TEST(Gemm, RejectsBadArguments) {
  const Weights W = make_weights(100, 40, DType::BF16, 1);
  std::vector<float> x(40), y(100);
  ThreadTeam team(1);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 10, 100}, team), std::invalid_argument);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 0, 200}, team), std::invalid_argument);
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100, 0, -1, 3, 40}, team), std::invalid_argument);
  Schedule bad = default_schedule({1, 100, 40, DType::BF16, 1});
  bad.tn = 3;
  EXPECT_THROW(gemm(W.pw, GemmArgs{x.data(), 40, 1, y.data(), 100}, team, &bad), std::invalid_argument);
  EXPECT_THROW(plan_packed_weight(0, 5, DType::F32), std::invalid_argument);
}

TEST(PackedWeight, UnpacksExactlyAndPacksByRows) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const int64_t n = 150, k = 77;
    const Weights W = make_weights(n, k, dt, 11);
    std::vector<float> row(k);
    for (int64_t r = 0; r < n; ++r) {
      unpack_row(W.pw, r, row.data());
      for (int64_t j = 0; j < k; ++j) ASSERT_EQ(row[j], W.w[r * k + j]);
    }
    // Row blocks give the same bytes as the whole matrix.
    std::vector<uint8_t> buf(W.pw.bytes + 64);
    PackedWeight p2 = W.pw;
    p2.data = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    pack_weight_rows(p2, W.w.data(), DType::F32, k, 0, 128);
    pack_weight_rows(p2, W.w.data() + 128 * k, DType::F32, k, 128, n);
    EXPECT_EQ(std::memcmp(p2.data, W.pw.data, W.pw.bytes), 0);
    EXPECT_THROW(pack_weight_rows(p2, W.w.data(), DType::F32, k, 10, 64), std::invalid_argument);
  }
}

// Each micro-kernel this CPU can run, against the scalar kernel of the same tile rows.
TEST(MicroKernels, EveryRunnableKernelMatchesTheScalarOne) {
  int checked = 0;
  for (const MicroKernel& mk : microkernel_table()) {
    if (!cpu_has(mk.isa)) continue;
    const int64_t k = 38;
    const Weights W = make_weights(kPanel, k, mk.weights, 3);
    const bool bf16_a = mk.isa == Isa::Avx512Bf16;
    const auto x = random_x(mk.um, k, 5, true);
    std::vector<uint16_t> xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
    const void* a = bf16_a ? static_cast<const void*>(xb.data()) : x.data();
    for (bool acc : {false, true}) {
      std::vector<float> c(mk.um * kPanel, 1.5f), want(c);
      mk.fn(a, k, W.pw.data, k, c.data(), kPanel, acc);
      std::vector<float> ref(mk.um * kPanel);
      gemm_ref(x.data(), k, W.w.data(), k, mk.um, kPanel, k, ref.data(), kPanel);
      for (int i = 0; i < mk.um; ++i)
        for (int j = 0; j < kPanel; ++j) {
          const float expect = j < mk.un ? ref[i * kPanel + j] + (acc ? 1.5f : 0.0f) : 1.5f;
          ASSERT_NEAR(c[i * kPanel + j], expect, 1e-3) << mk.name() << " acc=" << acc << " at " << i << "," << j;
        }
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
  // The table lists every shape that fits the registers, with its register use.
  for (const MicroKernel& mk : microkernel_table())
    if (mk.isa != Isa::Scalar) {
      EXPECT_LE(mk.registers, mk.isa == Isa::Avx2 ? 16 : 32) << mk.name();
    }
}

TEST(CostModel, DefaultSchedulesAreValidForManyShapes) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t m : {1, 2, 5, 6, 7, 16, 64, 128, 512})
      for (int threads : {1, 2}) {
        const GemmShape s{m, 4096, 4096, dt, threads};
        const Schedule c = default_schedule(s);
        EXPECT_NO_THROW(validate_schedule(s, c)) << c.to_string();
        EXPECT_GT(predict_seconds(s, c), 0.0);
      }
}

}  // namespace
}  // namespace sandwich::kernels
