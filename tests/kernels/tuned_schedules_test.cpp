// The tuned-schedule table: lookup by key and M, validation on add, the installed table that
// gemm() runs, and the once-per-key miss report.
#include "kernels/tuned_schedules.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "random_values.h"
#include "random_weights.h"

namespace sandwich::kernels {
namespace {

// Every test leaves the process with no table installed.
class TunedSchedulesTest : public ::testing::Test {
 protected:
  void TearDown() override { install_tuned_schedules(nullptr); }
};

// A valid schedule for the key that differs from the cost model's: other slice sizes.
Schedule variant(const GemmKey& key, int64_t m, int which) {
  Schedule s = default_schedule(GemmShape{m, key.n, key.k, key.weights, key.threads, key.pair});
  s.bm = s.um * (1 + which % 3);
  s.bn = kPanel * (1 + which % 2);
  s.bk = k_group(key.weights) * (16 + 40 * which);
  return s;
}

TEST_F(TunedSchedulesTest, KeyText) {
  EXPECT_EQ((GemmKey{2048, 5504, DType::BF16, 2, false}.to_string()),
            "N=2048 K=5504 bf16 threads=2");
  EXPECT_EQ((GemmKey{64, 32, DType::F32, 1, true}.to_string()), "N=64 K=32 f32 threads=1 pair");
  const GemmKey k = key_of(GemmShape{7, 256, 128, DType::BF16, 2, true});
  EXPECT_EQ(k, (GemmKey{256, 128, DType::BF16, 2, true}));
}

TEST_F(TunedSchedulesTest, FindsTheRangeOfM) {
  const GemmKey key{256, 128, DType::BF16, 2, false};
  TunedSchedules t;
  const Schedule a = variant(key, 1, 0), b = variant(key, 8, 1), c = variant(key, 100, 2);
  t.add(key, 100, 200, c);  // any order
  t.add(key, 1, 3, a);
  t.add(key, 4, 99, b);
  EXPECT_EQ(t.keys(), 1u);
  EXPECT_EQ(t.ranges(), 3u);
  EXPECT_TRUE(t.has_key(key));
  ASSERT_NE(t.ranges_of(key), nullptr);
  EXPECT_EQ(t.ranges_of(key)->front().m_lo, 1);
  EXPECT_EQ(t.ranges_of(key)->back().m_hi, 200);
  const auto shape = [&](int64_t m) {
    return GemmShape{m, key.n, key.k, key.weights, key.threads, key.pair};
  };
  for (auto [m, want] : {std::pair{1, &a}, {3, &a}, {4, &b}, {99, &b}, {100, &c}, {200, &c}}) {
    const Schedule* got = t.find(shape(m));
    ASSERT_NE(got, nullptr) << m;
    EXPECT_EQ(*got, *want) << m;
  }
  EXPECT_EQ(t.find(shape(201)), nullptr);
  // Another key: other N, threads or the pair flag.
  EXPECT_EQ(t.find(GemmShape{1, 256, 128, DType::BF16, 1}), nullptr);
  EXPECT_EQ(t.find(GemmShape{1, 256, 128, DType::BF16, 2, true}), nullptr);
  EXPECT_EQ(t.find(GemmShape{1, 320, 128, DType::BF16, 2}), nullptr);
  // Batch-invariant GEMMs run one-set kernels the tuner did not measure.
  GemmShape bi = shape(2);
  bi.batch_invariant = true;
  EXPECT_EQ(t.find(bi), nullptr);
}

TEST_F(TunedSchedulesTest, AddRejectsBadRangesOverlapsAndSchedulesNamingKeyAndRange) {
  const GemmKey key{256, 128, DType::BF16, 2, false};
  TunedSchedules t;
  t.add(key, 10, 20, variant(key, 10, 0));
  const auto message = [&](int64_t lo, int64_t hi, const Schedule& s) -> std::string {
    try {
      t.add(key, lo, hi, s);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const Schedule ok = variant(key, 1, 1);
  std::string m = message(20, 30, ok);
  EXPECT_NE(m.find("N=256 K=128 bf16 threads=2 M 20..30"), std::string::npos) << m;
  EXPECT_NE(m.find("overlaps M 10..20"), std::string::npos) << m;
  m = message(1, 10, ok);
  EXPECT_NE(m.find("overlaps M 10..20"), std::string::npos) << m;
  EXPECT_NE(message(12, 14, ok), "");
  EXPECT_NE(message(0, 4, ok).find("M 0..4"), std::string::npos);
  EXPECT_NE(message(5, 4, ok), "");
  Schedule split = ok;
  split.tm = 1;
  split.tn = 3;
  split.tk = 1;
  m = message(1, 4, split);
  EXPECT_NE(m.find("N=256 K=128 bf16 threads=2 M 1..4"), std::string::npos) << m;
  EXPECT_NE(m.find("thread grid"), std::string::npos) << m;
  Schedule bad_bn = ok;
  bad_bn.bn = 100;
  EXPECT_NE(message(1, 4, bad_bn), "");
  EXPECT_EQ(t.ranges(), 1u);
  EXPECT_EQ(message(1, 9, ok), "");
  EXPECT_EQ(message(21, 21, ok), "");
  EXPECT_EQ(t.ranges(), 3u);
}

// A table read from a file adds its schedules as text: parsed once, here, and refused naming
// the key and range like any other bad entry.
TEST_F(TunedSchedulesTest, AddParsesScheduleText) {
  const GemmKey key{256, 128, DType::BF16, 2, false};
  TunedSchedules t;
  const Schedule s = variant(key, 1, 1);
  t.add(key, 1, 8, s.to_string());
  ASSERT_NE(t.find(GemmShape{4, 256, 128, DType::BF16, 2}), nullptr);
  EXPECT_EQ(*t.find(GemmShape{4, 256, 128, DType::BF16, 2}), s);
  try {
    t.add(key, 9, 16, std::string("avx512bf16 6x64 slice 96x256"));
    FAIL() << "a malformed schedule was added";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("tuned schedule for N=256 K=128 bf16 threads=2 M 9..16: "
                                          "schedule \"avx512bf16 6x64 slice 96x256\": malformed",
                                          0),
              0u)
        << e.what();
  }
  EXPECT_EQ(t.ranges(), 1u);
}

TEST_F(TunedSchedulesTest, PlannedScheduleUsesTheInstalledTableAndReportsEachMissOnce) {
  const GemmKey key{256, 128, DType::BF16, 2, false};
  auto t = std::make_shared<TunedSchedules>();
  const Schedule s = variant(key, 1, 1);
  t->add(key, 1, 8, s);
  const GemmShape in{4, 256, 128, DType::BF16, 2}, out{9, 256, 128, DType::BF16, 2};
  const GemmShape other{4, 512, 128, DType::BF16, 2};
  EXPECT_EQ(planned_schedule(in), default_schedule(in));  // nothing installed yet
  std::vector<std::string> missed;
  install_tuned_schedules(t, [&](const GemmKey& k) { missed.push_back(k.to_string()); });
  EXPECT_EQ(installed_tuned_schedules(), t.get());
  EXPECT_EQ(planned_schedule(in), s);
  EXPECT_EQ(planned_schedule(out), default_schedule(out));
  EXPECT_EQ(planned_schedule(GemmShape{100, 256, 128, DType::BF16, 2}),
            default_schedule(GemmShape{100, 256, 128, DType::BF16, 2}));
  EXPECT_EQ(planned_schedule(other), default_schedule(other));
  EXPECT_EQ(planned_schedule(other), default_schedule(other));
  GemmShape bi = in;
  bi.batch_invariant = true;
  EXPECT_EQ(planned_schedule(bi), default_schedule(bi));  // not a miss: never tuned
  EXPECT_EQ(missed,
            (std::vector<std::string>{"N=256 K=128 bf16 threads=2", "N=512 K=128 bf16 threads=2"}));
  install_tuned_schedules(nullptr);
  EXPECT_EQ(installed_tuned_schedules(), nullptr);
  EXPECT_EQ(planned_schedule(in), default_schedule(in));
}

TEST_F(TunedSchedulesTest, ConcurrentMissesReportOnce) {
  auto t = std::make_shared<TunedSchedules>();
  std::atomic<int> reports{0};
  install_tuned_schedules(t, [&](const GemmKey&) { ++reports; });
  const GemmShape shape{3, 192, 64, DType::F32, 1};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int r = 0; r < 200; ++r) planned_schedule(shape);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(reports.load(), 1);
}

// gemm() and gemm_silu_mul() with no schedule run the table's, and match the reference.
TEST_F(TunedSchedulesTest, GemmRunsTheTablesSchedulesWithinTheReferenceTolerance) {
  const int64_t n = 192 + 37, k = 301;
  for (DType dt : {DType::F32, DType::BF16})
    for (int threads : {1, 2}) {
      const test::RandomWeights W = test::random_weights(n, k, dt, 11);
      const test::RandomWeights U = test::random_weights(n, k, dt, 12);
      auto t = std::make_shared<TunedSchedules>();
      const GemmKey key{n, k, dt, threads, false}, pair{n, k, dt, threads, true};
      // Split-k where the team allows it: a different summation order than the default.
      Schedule splitk = variant(key, 5, 2);
      splitk.tm = splitk.tn = 1;
      splitk.tk = threads;
      t->add(key, 1, 4, variant(key, 1, 0));
      t->add(key, 5, 12, splitk);
      t->add(key, 13, 64, variant(key, 13, 1));
      t->add(pair, 1, 64, variant(pair, 1, 2));
      install_tuned_schedules(t, [](const GemmKey& key) { FAIL() << "miss " << key.to_string(); });
      ThreadTeam team(threads);
      for (int64_t m : {1, 3, 5, 12, 13, 40}) {
        const GemmShape shape{m, n, k, dt, threads};
        ASSERT_EQ(planned_schedule(shape), *t->find(shape));
        const auto x = test::random_normal(static_cast<size_t>(m * k), 13, 1.0f, true);
        std::vector<float> ref(m * n), y(m * n), g(m * n), u(m * n), h(m * n);
        gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
        gemm(W.pw, GemmArgs{x.data(), k, m, y.data(), n}, team);
        const double tol = 1e-4 * std::sqrt(double(k)) + 1e-5;
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(y[i], ref[i], tol)
              << dtype_name(dt) << " m=" << m << " at " << i << " " << t->find(shape)->to_string();
        gemm_ref(x.data(), k, U.w.data(), k, m, n, k, u.data(), n);
        gemm_silu_mul(W.pw, U.pw, GemmArgs{x.data(), k, m, h.data(), n}, team);
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(h[i], ref[i] / (1 + std::exp(-ref[i])) * u[i],
                      1e-3 * (1 + std::fabs(ref[i] * u[i])))
              << "pair m=" << m << " at " << i;
      }
      install_tuned_schedules(nullptr);
    }
}

TEST_F(TunedSchedulesTest, KernelsVersionIsShortAndStable) {
  const std::string v = kernels_version();
  EXPECT_EQ(v, kernels_version());
  EXPECT_GE(v.size(), 8u);
  EXPECT_LE(v.size(), 24u);
  EXPECT_EQ(v.find(' '), std::string::npos);
}

}  // namespace
}  // namespace sandwich::kernels
