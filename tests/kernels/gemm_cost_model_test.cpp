// The cost model's default schedules and the schedule text format.
#include <chrono>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "kernels/schedule.h"

namespace sandwich::kernels {
namespace {

TEST(CostModel, DefaultSchedulesAreValidForManyShapes) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t m : {1, 2, 5, 6, 7, 16, 64, 128, 512})
      for (int threads : {1, 2, 3})
        for (bool pair : {false, true}) {
          const GemmShape s{m, 4096, 4096, dt, threads, pair};
          const Schedule c = default_schedule(s);
          EXPECT_NO_THROW(validate_schedule(s, c)) << c.to_string();
          EXPECT_GT(predict_seconds(s, c), 0.0);
          EXPECT_LE(c.um, m);
          if (pair) {
            EXPECT_EQ(c.tk, 1) << c.to_string();
          }
        }
  EXPECT_THROW(default_schedule({0, 64, 64, DType::F32, 1}), std::invalid_argument);
}

TEST(CostModel, DecodeStreamsWholePanelsSplitByColumns) {
  if (cpu_isa() < Isa::Avx2) GTEST_SKIP() << "scalar CPU";
  const Schedule s = default_schedule({1, 4096, 4096, DType::BF16, 2});
  EXPECT_EQ(s.um, 1);
  EXPECT_EQ(s.tn, 2) << s.to_string();
  EXPECT_EQ(s.bn, kPanel) << s.to_string();
  // Compute-bound shapes use tiles with enough accumulators to hide the FMA latency.
  if (gemm_isa(DType::BF16) != Isa::Avx512Bf16) return;
  const Schedule p = default_schedule({512, 4096, 4096, DType::BF16, 2});
  const MicroKernel* k = find_microkernel(p.isa, DType::BF16, p.um, p.un);
  ASSERT_NE(k, nullptr);
  EXPECT_GE(k->um * k->un / 16, 12) << p.to_string();
}

TEST(CostModel, CachedDecisionsAreCheap) {
  const GemmShape s{77, 1000, 3000, DType::BF16, 2};
  default_schedule(s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) default_schedule(s);
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1000;
  EXPECT_LT(per_call, 20e-6);
}

TEST(Schedule, TextRoundTrips) {
  Schedule s{.isa = Isa::Avx2,
             .um = 3,
             .un = 32,
             .bm = 96,
             .bn = 256,
             .bk = 512,
             .tm = 1,
             .tn = 2,
             .tk = 1,
             .prefetch = false};
  EXPECT_EQ(s.to_string(), "avx2 3x32 slice 96x256x512 threads 1x2x1 noprefetch");
  EXPECT_EQ(parse_schedule(s.to_string()), s);
  s.prefetch = true;
  EXPECT_EQ(parse_schedule(s.to_string()), s);
  EXPECT_THROW(parse_schedule("avx9 3x32 slice 96x256x512 threads 1x2x1"), std::invalid_argument);
  EXPECT_THROW(parse_schedule("avx2 3x32 slice 96x256 threads 1x2x1"), std::invalid_argument);
  EXPECT_THROW(parse_schedule("avx2 3x32 slice 96x256x512 threads 1x2x1 fast"),
               std::invalid_argument);
}

// A thread grid whose int product overflows (and wraps to the team's size: 3 x 1431655766 =
// 2^32 + 2) is refused like any other wrong grid; UBSan flagged the multiplication.
TEST(GemmCostModel, AThreadGridThatOverflowsIsRefused) {
  for (const char* grid : {"3x1431655766x1", "65536x65536x1"}) {
    const Schedule s = parse_schedule(std::string("scalar 1x64 slice 1x64x256 threads ") + grid);
    EXPECT_THROW(validate_schedule({1, 64, 256, DType::F32, 2}, s), std::invalid_argument) << grid;
  }
}

}  // namespace
}  // namespace sandwich::kernels
