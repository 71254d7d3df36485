// The GEMM tuner's search against a fake profiler (the cost model's prediction, perturbed per
// schedule, with a log of what was measured), and a small real tuning whose schedules must
// compute what the scalar reference does.
#include "tuner/gemm_tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "logging_profiler.h"

namespace sandwich::tuner {
namespace {

using kernels::DType;
using kernels::GemmKey;
using kernels::GemmShape;
using kernels::Schedule;

using test::Measured;

// Deterministic, within +-3% of the cost model, the same for a schedule at every M (so that
// winners are stable and reuse can kick in).
double perturbed(const GemmShape& s, const Schedule& c) {
  const size_t h = std::hash<std::string>{}(c.to_string());
  return kernels::predict_seconds(s, c) * (1.0 + 0.03 * (double(h % 1000) / 500.0 - 1.0));
}

// The cost model's times, perturbed, unless a test gives its own.
class FakeProfiler : public test::LoggingProfiler {
 public:
  explicit FakeProfiler(SecondsFn f = perturbed) : LoggingProfiler(std::move(f)) {}
};

GemmKey key(int64_t n, int64_t k, bool pair = false, int threads = 2) {
  return GemmKey{n, k, DType::BF16, threads, pair};
}

bool has_bf16_kernels() {
  return kernels::gemm_isa(DType::BF16) == kernels::Isa::Avx512Bf16;
}

TEST(GemmTuner, FastStartRollsBackTheStepThatStopsGaining) {
  // Time falls with bk up to 512 and rises past it: K growth must try 1024, roll back, and
  // never go on to 2048 or 4096 (the cost model's own choice aside).
  FakeProfiler p([](const GemmShape& s, const Schedule& c) {
    return kernels::predict_seconds(s, c) * (1 + std::abs(std::log2(double(c.bk) / 512)));
  });
  GemmTuner t(p, {.max_m = 1});
  const GemmGroupResult r = t.tune(key(1024, 4096));
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_EQ(r.points[0].schedule.bk, 512);
  const Schedule dflt = kernels::default_schedule({1, 1024, 4096, DType::BF16, 2});
  bool tried_1024 = false;
  for (const Measured& m : p.log) {
    tried_1024 |= m.schedule.bk == 1024;
    if (m.schedule.bk > 1024) {
      EXPECT_EQ(m.schedule.bk, dflt.bk) << m.schedule.to_string();
    }
  }
  EXPECT_TRUE(tried_1024);
}

TEST(GemmTuner, SlicesNeverExceedWhatTheThreadSplitLeavesAThread) {
  // The paper's (M, N, K) = (128, 64, 64) on 2 threads; N is whole 64-column panels here, so
  // (128, 128, 64): a thread's slice is at most (64, 64, 32) along the split dimension.
  FakeProfiler p([](const GemmShape& s, const Schedule& c) {
    return kernels::predict_seconds(s, c) / std::pow(double(c.bm * c.bn * c.bk), 0.2);
  });
  // The search's own slices (the confirmation also times the cost model's, which need not fit).
  GemmTuner t(p, {.window = 4, .max_m = 128, .dense_m = 128, .confirm_rounds = 0});
  t.tune(key(128, 64));
  ASSERT_FALSE(p.log.empty());
  bool split_m = false;
  for (const Measured& m : p.log) {
    const Schedule& c = m.schedule;
    const int64_t rows = (m.shape.m + c.tm - 1) / c.tm;
    EXPECT_LE(c.bm, (rows + c.um - 1) / c.um * c.um) << c.to_string();
    EXPECT_LE(c.bn, (2 + c.tn - 1) / c.tn * 64) << c.to_string();
    EXPECT_LE(c.bk, (64 / c.tk + 31) / 32 * 32) << c.to_string();
    if (m.shape.m == 128 && c.tm == 2) {
      split_m = true;
      EXPECT_LE(c.bm, 64) << c.to_string();
    }
    if (c.tn == 2) {
      EXPECT_LE(c.bn, 64) << c.to_string();
    }
  }
  EXPECT_TRUE(split_m);
}

// The micro-kernels (um, un) measured at each M.
std::map<int64_t, std::set<std::pair<int, int>>> kernels_by_m(const FakeProfiler& p) {
  std::map<int64_t, std::set<std::pair<int, int>>> out;
  for (const Measured& m : p.log) out[m.shape.m].insert({m.schedule.um, m.schedule.un});
  return out;
}

TEST(GemmTuner, TheWindowRestrictsMicroKernelsAfterWindowShapes) {
  if (!has_bf16_kernels()) GTEST_SKIP() << "no AVX512_BF16";
  FakeProfiler p;
  const int window = 4;
  GemmTuner t(p, {.window = window, .max_m = 24, .dense_m = 24});
  const GemmGroupResult r = t.tune(key(512, 512));
  const auto by_m = kernels_by_m(p);
  // M = 1..window try every micro-kernel no taller than M: M = 4 more than 3 widths x 4.
  EXPECT_GE(by_m.at(window).size(), 12u);
  for (int64_t m = window + 1; m <= 24; ++m) {
    if (!by_m.count(m)) continue;  // reused or cached
    // The winners of the last `window` searches before M (reused M were not searched).
    std::set<std::pair<int, int>> allowed;
    int searches = 0;
    for (int64_t j = m - 1; j >= 1 && searches < window; --j) {
      const TunedPoint& w = r.points[j - 1];
      if (w.how != "searched" && w.how != "window" && w.how != "default") continue;
      allowed.insert({w.schedule.um, w.schedule.un});
      ++searches;
    }
    const Schedule d = kernels::default_schedule({m, 512, 512, DType::BF16, 2});
    allowed.insert({d.um, d.un});
    for (const auto& k : by_m.at(m))
      EXPECT_TRUE(allowed.count(k)) << "M=" << m << " tried " << k.first << "x" << k.second;
  }
  EXPECT_GT(t.stats().window_saved, 0);
}

TEST(GemmTuner, ReuseFixesAStableSliceAndSavesMeasurements) {
  FakeProfiler p;
  GemmTuner t(p, {.window = 8, .max_m = 256});
  const GemmGroupResult r = t.tune(key(1024, 1024));
  int reused = 0;
  for (const TunedPoint& pt : r.points)
    if (pt.how == "reused") {
      ++reused;
      EXPECT_EQ(pt.seconds, 0);
    }
  EXPECT_GT(reused, 0);
  EXPECT_EQ(t.stats().reuse_saved_m, reused);
  // Every M searched or checked was measured; the rest were not.
  std::set<int64_t> measured_m;
  for (const Measured& m : p.log) measured_m.insert(m.shape.m);
  EXPECT_LT(measured_m.size(), 256u - reused + 1);
  for (const TunedPoint& pt : r.points)
    if (pt.how == "reused") {
      EXPECT_FALSE(measured_m.count(pt.m)) << pt.m;
    }
}

TEST(GemmTuner, PointsCoverEveryMInOrderWithValidSchedules) {
  FakeProfiler p;
  GemmTuner t(p, {.window = 4, .max_m = 300, .dense_m = 32});
  for (const GemmKey& k : {key(640, 384), key(256, 1000, true)}) {
    const GemmGroupResult r = t.tune(k);
    ASSERT_EQ(r.points.size(), 300u);
    std::set<std::string> hows;
    for (size_t i = 0; i < r.points.size(); ++i) {
      const TunedPoint& pt = r.points[i];
      ASSERT_EQ(pt.m, int64_t(i) + 1);
      hows.insert(pt.how);
      EXPECT_NO_THROW(
          kernels::validate_schedule({pt.m, k.n, k.k, k.weights, k.threads, k.pair}, pt.schedule))
          << pt.schedule.to_string();
      EXPECT_TRUE(pt.how == "searched" || pt.how == "window" || pt.how == "reused" ||
                  pt.how == "verified" || pt.how == "derived" || pt.how == "default")
          << pt.how;
    }
    EXPECT_TRUE(hows.count("searched"));
  }
  EXPECT_GT(t.stats().profiled, 0);
  EXPECT_GT(t.stats().cache_hits, 0);
}

TEST(GemmTuner, NeverWorseThanTheCostModelAtMeasuredPoints) {
  FakeProfiler p;
  GemmTuner t(p, {.window = 4, .max_m = 64});
  const GemmGroupResult r = t.tune(key(2048, 2048));
  for (const TunedPoint& pt : r.points) {
    if (pt.seconds <= 0) continue;
    const GemmShape s{pt.m, 2048, 2048, DType::BF16, 2};
    EXPECT_LE(pt.seconds, perturbed(s, kernels::default_schedule(s)) * 1.0501) << pt.m;
  }
}

TEST(GemmTuner, StopReturnsFinishedPointsAndResumeContinuesIdentically) {
  const GemmTunerOptions o{.window = 4, .max_m = 200, .dense_m = 24};
  FakeProfiler whole_p;
  GemmTuner whole_t(whole_p, o);
  const GemmGroupResult whole = whole_t.tune(key(768, 512));

  FakeProfiler p1;
  GemmTuner t1(p1, o);
  const GemmGroupResult part =
      t1.tune(key(768, 512), nullptr, [&] { return p1.log.size() >= 150; });
  EXPECT_EQ(t1.stats().profiled, 150);  // the 151st measurement was not started
  ASSERT_GT(part.points.size(), 0u);
  ASSERT_LT(part.points.size(), 200u);
  for (size_t i = 0; i < part.points.size(); ++i) EXPECT_EQ(part.points[i].m, int64_t(i) + 1);

  FakeProfiler p2;
  GemmTuner t2(p2, o);
  const GemmGroupResult resumed = t2.tune(key(768, 512), &part);
  ASSERT_EQ(resumed.points.size(), whole.points.size());
  for (size_t i = 0; i < whole.points.size(); ++i) {
    EXPECT_EQ(resumed.points[i].schedule, whole.points[i].schedule) << "M=" << i + 1;
    EXPECT_EQ(resumed.points[i].how, whole.points[i].how) << "M=" << i + 1;
  }
  // The resumed run measured nothing for the M it was given.
  for (const Measured& m : p2.log) EXPECT_GT(m.shape.m, int64_t(part.points.size()));
}

TEST(GemmTuner, ProgressReportsTheGroupAndItsM) {
  FakeProfiler p;
  GemmTuner t(p, {.window = 2, .max_m = 20});
  std::vector<TunerProgress> seen;
  t.tune(key(256, 256), nullptr, {}, [&](const TunerProgress& pr) { seen.push_back(pr); });
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().m, 20);
  EXPECT_EQ(seen.back().group, "N=256 K=256 bf16 threads=2");
  EXPECT_GT(seen.back().best_gflops, 0);
}

// Weights with BF16-exact values, packed, and their unpacked rows for the reference.
struct Weights {
  std::vector<float> w;
  kernels::PackedWeight pw;
  std::vector<unsigned char> buf;
  Weights(int64_t n, int64_t k, DType dt, uint32_t seed) : w(static_cast<size_t>(n * k)) {
    uint64_t z = seed;
    for (float& v : w) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      v = kernels::bf16_to_f32(kernels::f32_to_bf16(float(int64_t(z >> 40) % 2001 - 1000) / 500));
    }
    pw = kernels::plan_packed_weight(n, k, dt);
    buf.resize(pw.bytes + 64);
    pw.data = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    kernels::pack_weight(pw, w.data(), DType::F32, k);
  }
};

TEST(GemmTuner, EveryScheduleOfARealSmallTuningMatchesTheReference) {
  // The machine profiler on tiny shapes: each tuned schedule must compute the reference result
  // (the tolerance of tests/kernels/gemm_test.cpp).
  auto profiler = make_machine_profiler({.warmup = 0, .min_reps = 1, .min_seconds = 0});
  GemmTuner t(*profiler, {.window = 4, .max_m = 8});
  const int64_t n = 128, k = 96;
  kernels::ThreadTeam team(2);
  for (DType dt : {DType::BF16, DType::F32})
    for (bool pair : {false, true}) {
      const GemmGroupResult r = t.tune(GemmKey{n, k, dt, 2, pair});
      ASSERT_EQ(r.points.size(), 8u);
      const Weights G(n, k, dt, 1), U(n, k, dt, 2);
      for (const TunedPoint& pt : r.points) {
        const int64_t m = pt.m;
        std::vector<float> x(static_cast<size_t>(m * k));
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = kernels::bf16_to_f32(kernels::f32_to_bf16(float(int(i * 37 % 101) - 50) / 40));
        std::vector<float> g(m * n), u(m * n), y(m * n, -1.0f);
        kernels::gemm_ref(x.data(), k, G.w.data(), k, m, n, k, g.data(), n);
        kernels::gemm_ref(x.data(), k, U.w.data(), k, m, n, k, u.data(), n);
        const kernels::GemmArgs a{x.data(), k, m, y.data(), n};
        const double tol = 1e-4 * std::sqrt(double(k)) + 1e-5;
        if (pair)
          kernels::gemm_silu_mul(G.pw, U.pw, a, team, &pt.schedule);
        else
          kernels::gemm(G.pw, a, team, &pt.schedule);
        for (int64_t i = 0; i < m * n; ++i) {
          const double want = pair ? g[i] / (1 + std::exp(-g[i])) * u[i] : g[i];
          ASSERT_NEAR(y[i], want, pair ? 1e-3 * (1 + std::fabs(g[i] * u[i])) : tol)
              << dtype_name(dt) << (pair ? " pair" : "") << " M=" << m << " "
              << pt.schedule.to_string() << " at " << i;
        }
      }
    }
}

}  // namespace
}  // namespace sandwich::tuner

namespace sandwich::tuner {
namespace {

// A schedule that looked faster once but is not when timed again beside the cost model's (a
// lucky sample) gives way to the cost model's schedule.
TEST(GemmTuner, AWinnerThatDoesNotHoldUpBesideTheCostModelGivesWay) {
  std::map<std::string, int> calls;
  FakeProfiler p([&](const GemmShape& s, const Schedule& c) {
    const double d = kernels::predict_seconds(s, kernels::default_schedule(s));
    if (c == kernels::default_schedule(s)) return d;
    return ++calls[std::to_string(s.m) + c.to_string()] == 1 ? 0.5 * d : 1.01 * d;
  });
  GemmTuner t(p, {.window = 2, .max_m = 8});
  const GemmGroupResult r = t.tune(key(512, 256));
  for (const TunedPoint& pt : r.points) {
    if (pt.how == "derived" || pt.how == "reused") continue;
    const GemmShape s{pt.m, 512, 256, DType::BF16, 2};
    EXPECT_EQ(pt.schedule, kernels::default_schedule(s)) << pt.m << " " << pt.how;
  }
  EXPECT_GT(t.stats().confirm_rejected, 0);
}

}  // namespace
}  // namespace sandwich::tuner
