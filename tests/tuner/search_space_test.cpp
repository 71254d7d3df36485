// The tuner's schedule space as the kernel sweep (bench_kernels --sweep) times it: every schedule
// valid, the cost model's among them, every thread split present, and the tuner's one-M search.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels/schedule.h"
#include "logging_profiler.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner {
namespace {

using kernels::DType;
using kernels::GemmShape;
using kernels::Schedule;

// The paper's Figure 2 shapes, on 2 and 4 threads.
TEST(SearchSpace, TheSweepShapesGiveValidSchedulesWithTheCostModelsChoice) {
  for (int threads : {2, 4})
    for (const GemmShape& s : {GemmShape{128, 1152, 2304, DType::BF16, threads},
                               GemmShape{512, 768, 1024, DType::BF16, threads}}) {
      const auto space = search_space(s);
      ASSERT_FALSE(space.empty());
      std::set<std::string> seen;
      std::set<std::array<int, 3>> splits;
      for (const Schedule& c : space) {
        EXPECT_NO_THROW(kernels::validate_schedule(s, c)) << c.to_string();
        EXPECT_TRUE(seen.insert(c.to_string()).second) << "twice: " << c.to_string();
        splits.insert({c.tm, c.tn, c.tk});
      }
      const Schedule d = kernels::default_schedule(s);
      EXPECT_TRUE(seen.count(d.to_string())) << d.to_string();
      // Every thread grid of the threads: along M and N at least, and split-k where K is long.
      EXPECT_TRUE(splits.count({threads, 1, 1}));
      EXPECT_TRUE(splits.count({1, threads, 1}));
      if (s.k / 2 >= 256 * threads) {
        EXPECT_TRUE(splits.count({1, 1, threads}));
      }
    }
}

TEST(SearchSpace, TilesNarrowItToTheGivenMicroKernels) {
  const GemmShape s{64, 512, 1024, DType::F32, 2};
  const Schedule d = kernels::default_schedule(s);
  const auto all = search_space(s);
  const auto some = search_space(s, {{d.um, d.un}});
  EXPECT_LT(some.size(), all.size());
  for (const Schedule& c : some) EXPECT_TRUE(c.um == d.um && c.un == d.un) << c.to_string();
  // Decode-sized M: prefetch off is part of the space too.
  bool off = false;
  for (const Schedule& c : search_space({1, 512, 1024, DType::F32, 2})) off |= !c.prefetch;
  EXPECT_TRUE(off);
}

TEST(SearchSpace, QuantizedWeightsAreRefusedByName) {
  GemmShape s{8, 256, 256, DType::BF16, 1};
  s.qtype = kernels::QType::Q4_0;
  try {
    search_space(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("float weights"), std::string::npos) << e.what();
  }
}

// tune_at searches one M alone: the answer is a valid schedule no slower (by the fake clock)
// than the cost model's, found without measuring any other M.
TEST(SearchSpace, TuneAtSearchesOneMAlone) {
  test::LoggingProfiler p([](const GemmShape& s, const Schedule& c) {
    return kernels::predict_seconds(s, c) * (c.bk == 256 ? 0.8 : 1.0);
  });
  GemmTuner t(p, {});
  const kernels::GemmKey key{1152, 2304, DType::F32, 2};
  const TunedPoint pt = t.tune_at(key, 128);
  const GemmShape s = kernels::shape_at(key, 128);
  EXPECT_EQ(pt.m, 128);
  EXPECT_NO_THROW(kernels::validate_schedule(s, pt.schedule));
  EXPECT_LE(pt.seconds, kernels::predict_seconds(s, kernels::default_schedule(s)));
  for (const auto& m : p.log) EXPECT_EQ(m.shape.m, 128);
  EXPECT_GT(p.log.size(), 10u);
}

}  // namespace
}  // namespace sandwich::tuner
