// The GEMM tuner on quantized weights: its search stays within the quantized GEMM's schedules
// (integer tiles 16 columns wide, K blocks of whole blocks, no split-k; the BF16-unpacking path
// only from unpack_min_m), takes the unpacking path where it measures faster, and a small real
// tuning's schedules run on the real quantized GEMM and compute what the rule's schedule does.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/quantize.h"
#include "kernels/tuned_schedules.h"
#include "logging_profiler.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner {
namespace {

using kernels::DType;
using kernels::GemmKey;
using kernels::GemmShape;
using kernels::QType;
using kernels::Schedule;

using test::LoggingProfiler;
using test::Measured;

GemmKey quant_key(int64_t n, int64_t k, QType t, bool pair = false) {
  GemmKey key{n, k, DType::BF16, 2, pair};
  key.qtype = t;
  return key;
}

// Taller tiles and K blocks near 512 are faster; the unpacking path is three times slower than
// the integer kernels below M = 40 and twice as fast from it.
double fake_seconds(const GemmShape& s, const Schedule& c) {
  const double base = 1e-12 * double(s.m) * double(s.n) * double(s.k) + 1e-5;
  if (c.unpack_bf16) return base * (s.m >= 40 ? 0.5 : 3.0) * (1 + 0.01 * 64.0 / double(c.bn));
  return base * (1 + 0.1 * (8 - c.um)) * (1 + 0.05 * std::abs(std::log2(double(c.bk) / 512))) *
         (1 + 0.01 * 16.0 / double(c.bn));
}

TEST(QuantGemmTuner, SearchesTheQuantizedSchedulesAndTheUnpackingPathFromItsM) {
  LoggingProfiler p(fake_seconds);
  GemmTuner t(p, {.window = 4, .max_m = 48, .dense_m = 48, .unpack_min_m = 32});
  const GemmKey key = quant_key(256, 1024, QType::Q4_K);
  const GemmGroupResult r = t.tune(key);
  ASSERT_EQ(r.points.size(), 48u);
  bool unpacked = false;
  for (const Measured& m : p.log) {
    ASSERT_EQ(m.shape.qtype, QType::Q4_K);
    EXPECT_NO_THROW(kernels::validate_schedule(m.shape, m.schedule)) << m.schedule.to_string();
    if (m.schedule.unpack_bf16) {
      unpacked = true;
      EXPECT_GE(m.shape.m, 32) << m.schedule.to_string();
      EXPECT_EQ(m.schedule.bn % 64, 0) << m.schedule.to_string();  // whole BF16 panels
    } else {
      EXPECT_EQ(m.schedule.isa, kernels::quant_gemm_isa()) << m.schedule.to_string();
      EXPECT_EQ(m.schedule.un, 16) << m.schedule.to_string();
      EXPECT_EQ(m.schedule.tk, 1) << m.schedule.to_string();
      EXPECT_EQ(m.schedule.bk % 256, 0) << m.schedule.to_string();
      // Prefetch is a switch the tuner tries at one or two rows only.
      if (m.shape.m > 2) {
        EXPECT_TRUE(m.schedule.prefetch) << m.schedule.to_string();
      }
    }
  }
  EXPECT_TRUE(unpacked);
  for (const TunedPoint& pt : r.points) {
    EXPECT_NO_THROW(kernels::validate_schedule(kernels::shape_at(key, pt.m), pt.schedule))
        << pt.m << " " << pt.schedule.to_string();
    if (pt.m < 32) {
      EXPECT_FALSE(pt.schedule.unpack_bf16) << pt.m << " " << pt.how;
    }
  }
  // The last M is always searched: there the unpacking path measures fastest.
  EXPECT_TRUE(r.points.back().schedule.unpack_bf16) << r.points.back().schedule.to_string();
  EXPECT_NE(r.points.back().how, "default");
}

// Packed weights of random values quantized to the type, and their dequantized values.
struct QuantWeights {
  std::vector<float> w;  // dequantized, n x k
  std::vector<unsigned char> raw;
  kernels::PackedWeight pw;

  QuantWeights(int64_t n, int64_t k, QType t, uint32_t seed) : w(static_cast<size_t>(n * k)) {
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = float(int((i * 2654435761u + seed * 97u) % 201) - 100) / 100;
    std::vector<unsigned char> blocks(static_cast<size_t>(n * kernels::quantized_bytes(t, k)));
    kernels::quantize_ref(t, w.data(), blocks.data(), n * k);
    kernels::dequantize_ref(t, blocks.data(), w.data(), n * k);
    pw = kernels::plan_packed_weight_quant(n, k, t);
    raw.resize(pw.bytes + 64);
    pw.data = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
    kernels::pack_weight_quant(pw, blocks.data(), kernels::quantized_bytes(t, k));
  }
};

TEST(QuantGemmTuner, EveryScheduleOfARealSmallTuningRunsAndComputesWhatTheRulesDoes) {
  auto profiler = make_machine_profiler({.warmup = 0, .min_reps = 1, .min_seconds = 0});
  GemmTuner t(*profiler, {.window = 2, .max_m = 6, .unpack_min_m = 5});
  kernels::ThreadTeam team(2);
  struct Case {
    QType type;
    int64_t n, k;
  };
  for (const Case& c : {Case{QType::Q4_0, 64, 96}, Case{QType::Q6_K, 48, 256}})
    for (bool pair : {false, true}) {
      const GemmKey key = quant_key(c.n, c.k, c.type, pair);
      const GemmGroupResult r = t.tune(key);
      ASSERT_EQ(r.points.size(), 6u) << key.to_string();
      const QuantWeights G(c.n, c.k, c.type, 1), U(c.n, c.k, c.type, 2);
      for (const TunedPoint& pt : r.points) {
        const int64_t m = pt.m, n = c.n, k = c.k;
        std::vector<float> x(static_cast<size_t>(m * k));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 101) - 50) / 40;
        const auto run = [&](const Schedule& s) {
          std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
          const kernels::GemmArgs a{x.data(), k, m, y.data(), n};
          if (pair)
            kernels::gemm_silu_mul(G.pw, U.pw, a, team, &s);
          else
            kernels::gemm(G.pw, a, team, &s);
          return y;
        };
        const Schedule rule = kernels::default_schedule(kernels::shape_at(key, m));
        ASSERT_FALSE(rule.unpack_bf16);
        const std::vector<float> want = run(rule), got = run(pt.schedule);
        if (!pt.schedule.unpack_bf16) {
          // The integer path's bits do not depend on its schedule.
          EXPECT_EQ(got, want) << key.to_string() << " M=" << m << " " << pt.schedule.to_string();
          continue;
        }
        // BF16 operands against int8 activations: within both roundings of the magnitudes.
        for (int64_t r0 = 0; r0 < m; ++r0)
          for (int64_t col = 0; col < n; ++col) {
            double mg = 0, mu = 0, g = 0, u = 0;
            for (int64_t j = 0; j < k; ++j) {
              const double xv = x[r0 * k + j];
              mg += std::fabs(G.w[col * k + j] * xv);
              mu += std::fabs(U.w[col * k + j] * xv);
              g += G.w[col * k + j] * xv;
              u += U.w[col * k + j] * xv;
            }
            const double tol =
                pair ? 0.02 * (mg * (1 + std::fabs(u)) + mu * (1 + std::fabs(g))) : 0.02 * mg;
            EXPECT_NEAR(got[r0 * n + col], want[r0 * n + col], tol + 1e-4)
                << key.to_string() << " M=" << m << " " << pt.schedule.to_string();
          }
      }
    }
}

}  // namespace
}  // namespace sandwich::tuner
