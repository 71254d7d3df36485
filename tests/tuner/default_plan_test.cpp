// sandwichd's configurations without a plan: the simulator's search of this machine, valid
// here, fast, and never a calibration run (a cached calibration is used; none: generic figures).
#include "tuner/default_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "topotree/hwloc_loader.h"
#include "tuner/calibration.h"

namespace sandwich::tuner {
namespace {

namespace fs = std::filesystem;

void expect_valid_here(const topotree::ServiceConfig& c) {
  ASSERT_GT(c.rank_count(), 0);
  EXPECT_LE(c.total_threads(), static_cast<int>(topotree::this_machine().all_cpus.size()));
  EXPECT_EQ(topotree::service_config_from_json(c.to_json()), c);  // CPUs and nodes of this machine
}

TEST(DefaultPlan, WithoutACachedCalibrationItUsesGenericFiguresAndMeasuresNothing) {
  test::TempDir cache;
  test::ScopedEnv env("XDG_CACHE_HOME", cache.path().string());
  ASSERT_FALSE(cached_calibration(topotree::this_machine().tree));
  std::string how;
  const auto t0 = std::chrono::steady_clock::now();
  const engine::Plan p =
      default_plan(engine::load_preset("llama-1.3b"), engine::WeightDType::BF16, &how);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_valid_here(p.prefill);
  expect_valid_here(p.decode);
  EXPECT_FALSE(p.schedules || p.inline_schedules);
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(how.rfind("chosen by the latency simulator in ", 0), 0u) << how;
  EXPECT_NE(how.find("with generic machine parameters, no calibration being cached"),
            std::string::npos)
      << how;
  EXPECT_TRUE(fs::is_empty(cache.path()));  // no calibration was run and cached
}

TEST(DefaultPlan, ACachedCalibrationIsUsed) {
  test::TempDir cache;
  test::ScopedEnv env("XDG_CACHE_HOME", cache.path().string());
  fs::path file;
  cached_calibration(topotree::this_machine().tree, &file);
  Calibration c;
  c.cpu = "test";
  c.cpus = {0};
  c.read_gbs = {20};
  c.fma_f32_gflops = 100;
  c.gemm_gflops_small = 20;
  c.gemm_gflops_large = 80;
  c.team_region_us = {0.5};
  fs::create_directories(file.parent_path());
  std::ofstream(file) << c.to_json().dump();
  ASSERT_TRUE(cached_calibration(topotree::this_machine().tree));
  std::string how;
  const engine::Plan p =
      default_plan(engine::load_preset("llama-160m"), engine::WeightDType::F32, &how);
  expect_valid_here(p.prefill);
  expect_valid_here(p.decode);
  EXPECT_NE(how.find("with this machine's cached calibration"), std::string::npos) << how;
}

}  // namespace
}  // namespace sandwich::tuner
