#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "topotree/hwloc_loader.h"
#include "tuner/calibration.h"

namespace sandwich::tuner {
namespace {

TEST(Calibration, ProbesMeasureSomethingPlausible) {
  const double bw = probe_read_bandwidth_gbs({0}, 32u << 20, 1);
  EXPECT_GT(bw, 0.5);
  EXPECT_LT(bw, 1000);
  const double fma = probe_fma_f32_gflops(0.01);
  EXPECT_GE(fma, 0);
  EXPECT_LT(fma, 2000);
  const double gemm = probe_gemm_gflops(16, 256, 256, 0, 0.01);
  EXPECT_GT(gemm, 0.1);
  EXPECT_GT(probe_team_region_us({0}, 200), 0);
}

// What params() makes of a record: measured figures where probes exist, fits for GEMM
// efficiency and contention.
TEST(Calibration, ParamsFromARecord) {
  Calibration c;
  c.cpu = "test CPU";
  c.cpus = {0, 1, 2, 3};
  c.read_gbs = {20, 38, 50, 45};  // peak at 3 cores, less at 4: contention
  c.fma_f32_gflops = 100;
  c.bf16_gflops = 200;
  c.gemm_m_small = 4;
  c.gemm_m_large = 128;
  // eff(m) = 0.8 m / (m + 4): 0.4 at m=4, 0.7758 at m=128.
  c.gemm_gflops_small = 200 * 0.8 * 4 / 8;
  c.gemm_gflops_large = 200 * 0.8 * 128 / 132;
  c.team_region_us = {0.1, 0.5, 0.7, 0.9};
  const MachineParams p = c.params();
  EXPECT_DOUBLE_EQ(p.core_gflops, 200);
  EXPECT_DOUBLE_EQ(p.core_f32_gflops, 100);
  EXPECT_NEAR(p.gemm_efficiency, 0.8, 1e-9);
  EXPECT_NEAR(p.gemm_m_half, 4, 1e-9);
  EXPECT_DOUBLE_EQ(p.core_bw_gbs, 20);
  EXPECT_DOUBLE_EQ(p.numa_bw_gbs, 50);
  // 4 cores want 80 of 50 GB/s and got 45: 50 / (1 + g (80/50 - 1)) = 45.
  EXPECT_NEAR(p.contention_gamma, (50.0 / 45 - 1) / (80.0 / 50 - 1), 1e-9);
  EXPECT_DOUBLE_EQ(p.team_sync_us, 0.1);
  EXPECT_NEAR(p.team_sync_log2_us, 0.4, 1e-9);
  EXPECT_NO_THROW(p.validate());
  // A record survives its JSON round trip.
  const Calibration back = Calibration::from_json(c.to_json());
  EXPECT_EQ(back.read_gbs, c.read_gbs);
  EXPECT_EQ(back.cpu, c.cpu);
}

TEST(Calibration, NoContentionWhenBandwidthOnlyGrows) {
  Calibration c;
  c.read_gbs = {20, 35};
  c.fma_f32_gflops = 50;
  c.gemm_gflops_small = 10;
  c.gemm_gflops_large = 30;
  c.team_region_us = {0.2};
  const MachineParams p = c.params();
  EXPECT_DOUBLE_EQ(p.contention_gamma, MachineParams{}.contention_gamma);
  EXPECT_DOUBLE_EQ(p.numa_bw_gbs, 35);
  EXPECT_DOUBLE_EQ(p.core_gflops, 50) << "no BF16: the FP32 rate";
}

// A record cached before the latent group probe existed has no "latent_groups": it still loads,
// and its parameters carry no latent group (the simulator's results as before).
TEST(Calibration, ARecordCachedBeforeTheLatentGroupProbeLoadsNeutral) {
  const nlohmann::json old = nlohmann::json::parse(R"({
      "cpu": "AMD EPYC 9R14", "cpus": [0, 1], "read_gbs": [21.5, 30.2], "fma_f32_gflops": 110,
      "bf16_gflops": 220, "gemm_m_small": 4, "gemm_m_large": 128, "gemm_gflops_small": 70,
      "gemm_gflops_large": 180, "team_region_us": [0.05, 0.9], "seconds": 1.2})");
  const Calibration c = Calibration::from_json(old);
  EXPECT_TRUE(c.latent_groups.empty());
  EXPECT_FALSE(c.params().latent_group.active());
  EXPECT_FALSE(c.params().to_json().contains("latent_group"));
  // Through the cache, as the tuner reads it.
  test::TempDir cache;
  test::ScopedEnv env("XDG_CACHE_HOME", cache.path().string());
  std::filesystem::path file;
  const topotree::TopoTree& local = topotree::this_machine().tree;
  ASSERT_FALSE(cached_calibration(local, &file));
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << old.dump(2);
  const auto cached = cached_calibration(local);
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->read_gbs, c.read_gbs);
  EXPECT_FALSE(cached->params().latent_group.active());
}

TEST(Calibration, LatentGroupProbesMakeTheParameter) {
  Calibration c;
  c.cpu = "test CPU";
  c.cpus = {0, 1, 2, 3};
  c.read_gbs = {16, 30, 44, 56};
  c.fma_f32_gflops = 40;
  c.gemm_gflops_small = 10;
  c.gemm_gflops_large = 30;
  c.team_region_us = {0.5};
  LatentGroupProbe clusters;
  clusters.cores = 4;
  clusters.packed = {0, 1, 2, 3};
  clusters.spread = {0, 4, 12, 16};
  clusters.packed_gbs = 30;
  clusters.spread_gbs = 60;
  c.latent_groups = {clusters};
  const Calibration back = Calibration::from_json(c.to_json());
  ASSERT_EQ(back.latent_groups.size(), 1u);
  const MachineParams p = back.params();
  EXPECT_EQ(p.latent_group, (LatentGroupParams{.cores = 4, .stride = 1, .bw_gbs = 30}));
  EXPECT_EQ(MachineParams::from_json(p.to_json(), "test").latent_group, p.latent_group);
  // No difference between packed and spread: neutral.
  c.latent_groups[0].packed_gbs = 59;
  EXPECT_FALSE(c.params().latent_group.active());
}

TEST(MachineParams, LatentGroupParsingAndValidation) {
  auto parse = [](const char* text) {
    return MachineParams::from_json(nlohmann::json::parse(text), "test");
  };
  EXPECT_FALSE(parse("{}").latent_group.active());
  EXPECT_FALSE(parse(R"({"latent_group": null})").latent_group.active());
  EXPECT_FALSE(parse(R"({"latent_group": {"cores": 0}})").latent_group.active());
  const MachineParams p = parse(R"({"latent_group": {"cores": 4, "stride": 2, "bw_gbs": 25.5}})");
  EXPECT_EQ(p.latent_group, (LatentGroupParams{.cores = 4, .stride = 2, .bw_gbs = 25.5}));
  EXPECT_EQ(parse(R"({"latent_group": {"cores": 4, "bw_gbs": 25}})").latent_group.stride, 1);
  for (const char* bad : {R"({"latent_group": {"cores": 1, "bw_gbs": 25}})",  // a group of one core
                          R"({"latent_group": {"cores": 4}})",                // no capacity
                          R"({"latent_group": {"cores": 4, "bw_gbs": -3}})",  //
                          R"({"latent_group": {"cores": 4, "stride": 0, "bw_gbs": 5}})",
                          R"({"latent_group": {"cores": 2.5, "bw_gbs": 5}})",  // not whole
                          R"({"latent_group": {"cores": "4", "bw_gbs": 5}})",  // not a number
                          R"({"latent_group": {"cores": 4, "bw_gbs": 5, "bw": 3}})",  // a typo
                          R"({"latent_group": 4})"}) {
    try {
      parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("latent_group"), std::string::npos) << e.what();
    }
  }
}

TEST(MachineParams, JsonRoundTripAndTypos) {
  MachineParams p;
  p.level_bw_gbs["L3"] = 25.6;
  p.core_bw_gbs = 12.5;
  const MachineParams q = MachineParams::from_json(p.to_json(), "test");
  EXPECT_EQ(q.level_bw_gbs, p.level_bw_gbs);
  EXPECT_DOUBLE_EQ(q.core_bw_gbs, 12.5);
  EXPECT_THROW(MachineParams::from_json({{"core_bw_gb", 3}}, "test"), std::invalid_argument);
  EXPECT_THROW(MachineParams::from_json({{"core_bw_gbs", -3}}, "test"), std::invalid_argument);
  EXPECT_THROW(MachineParams::from_json({{"gemm_efficiency", 1.5}}, "test"), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::tuner
