// Sanity of the simulator's predictions: the right bound per phase, more cores help where they
// should, contention and NUMA placement cost what they should.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "topotree/hwloc_loader.h"
#include "topotree/service_config.h"
#include "topotree/transforms.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"

#include "small_trace.h"

namespace sandwich::tuner {
namespace {

using test::small_trace;

// Figures of the order calibration measures on the 2-core development machine.
MachineParams two_core_params() {
  return MachineParams::from_json(nlohmann::json::parse(R"({
      "core_gflops": 190, "core_f32_gflops": 100, "gemm_efficiency": 0.9, "gemm_m_half": 3,
      "core_bw_gbs": 20, "numa_bw_gbs": 30, "team_sync_us": 0.1, "team_sync_log2_us": 1.0})"),
                                  "two_core_params");
}

topotree::ServiceConfig config(std::vector<std::vector<int>> ranks, int numa = 0) {
  topotree::ServiceConfig c;
  for (auto& cpus : ranks) c.ranks.push_back({numa, {numa}, std::move(cpus)});
  return c;
}

TEST(LatencySimulator, PredictionsAreFiniteAndAddUp) {
  const auto tree = topotree::load_topology("pack:1 core:2 pu:1").tree;
  LatencySimulator sim(tree, two_core_params(), engine::load_preset("llama-160m"), small_trace());
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    const Prediction p = sim.evaluate(config({{0, 1}}), ph);
    EXPECT_TRUE(std::isfinite(p.ms));
    EXPECT_GT(p.ms, 0);
    EXPECT_NEAR(p.ms, p.compute_ms + p.memory_ms + p.communication_ms + p.sync_ms, 1e-9 * p.ms);
    EXPECT_EQ(p.communication_ms, 0) << "one rank does not communicate";
  }
}

TEST(LatencySimulator, DecodeIsMemoryBoundAndPrefillComputeBound) {
  const auto tree = topotree::load_topology("pack:1 core:2 pu:1").tree;
  LatencySimulator sim(tree, two_core_params(), engine::load_preset("llama-1.3b"), small_trace());
  const Prediction d = sim.evaluate(config({{0, 1}}), Phase::Decode);
  const Prediction p = sim.evaluate(config({{0, 1}}), Phase::Prefill);
  EXPECT_GT(d.memory_ms, 5 * d.compute_ms);
  EXPECT_GT(p.compute_ms, 5 * p.memory_ms);
  // Decode streams the BF16 weights once per token: 1.3B x 2 bytes at 30 GB/s is about 90 ms.
  const double weights_ms = engine::load_preset("llama-1.3b").param_count() * 2.0 / 30e9 * 1e3;
  EXPECT_GT(d.ms, 0.9 * weights_ms);
  EXPECT_LT(d.ms, 1.3 * weights_ms);
}

// The configurations this machine has: 1 x 1, 1 x 2, 2 x 1 (the ranking the measured
// evaluator will be held against).
TEST(LatencySimulator, TwoCoreMachineRanking) {
  const auto tree = topotree::load_topology("pack:1 core:2 pu:1").tree;
  LatencySimulator sim(tree, two_core_params(), engine::load_preset("llama-160m"), small_trace());
  const auto one = config({{0}}), one_by_two = config({{0, 1}}), two_by_one = config({{0}, {1}});
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    const double t11 = sim.evaluate(one, ph).ms, t12 = sim.evaluate(one_by_two, ph).ms,
                 t21 = sim.evaluate(two_by_one, ph).ms;
    EXPECT_LT(t12, t11) << phase_name(ph);
    EXPECT_LT(t21, t11) << phase_name(ph);
    EXPECT_NEAR(t12 / t21, 1.0, 0.15) << phase_name(ph) << ": two cores either way";
  }
  // Prefill is compute-bound: a second core nearly halves it. Decode is bound by the shared
  // memory: 2 cores draw 30 GB/s where one draws 20.
  EXPECT_LT(sim.evaluate(one_by_two, Phase::Prefill).ms,
            0.6 * sim.evaluate(one, Phase::Prefill).ms);
  const double decode_gain =
      sim.evaluate(one, Phase::Decode).ms / sim.evaluate(one_by_two, Phase::Decode).ms;
  EXPECT_GT(decode_gain, 1.3);
  EXPECT_LT(decode_gain, 1.55);
}

TEST(LatencySimulator, ContentionMakesFewerCoresBetterForDecodeOnly) {
  const MachineDescription m = load_machine("kunpeng920-4s");
  MachineParams p = *m.params;
  p.latent_group = {};  // the die's memory alone (its clusters: latent_group_contention_test)
  LatencySimulator sim(m.tree, p, engine::load_preset("llama3-8b"), small_trace());
  const auto all = topotree::cut(m.tree, 2);  // 8 x 24
  const auto half =
      topotree::cut(topotree::apply_remove(m.tree, {.n = 12, .depth = 3}), 2);  // 8 x 12
  ASSERT_EQ(half.threads_per_rank(), 12);
  EXPECT_LT(sim.evaluate(half, Phase::Decode).ms, sim.evaluate(all, Phase::Decode).ms);
  EXPECT_GT(sim.evaluate(half, Phase::Prefill).ms, 1.5 * sim.evaluate(all, Phase::Prefill).ms);
  // Bandwidth per rank: 24 cores oversubscribe the die's memory, 12 cores saturate it exactly.
  const auto s_all = sim.rank_speeds(all), s_half = sim.rank_speeds(half);
  EXPECT_LT(s_all[0].bandwidth_gbs, m.params->numa_bw_gbs);
  EXPECT_GT(s_half[0].bandwidth_gbs, s_all[0].bandwidth_gbs);
  EXPECT_LE(s_half[0].bandwidth_gbs, m.params->numa_bw_gbs + 1e-9);
}

TEST(LatencySimulator, RanksSpanningNumaNodesDecodeSlower) {
  const MachineDescription m = load_machine("kunpeng920-4s");
  LatencySimulator sim(m.tree, *m.params, engine::load_preset("llama3-8b"), small_trace());
  const auto per_package = topotree::cut(m.tree, 1);  // 4 x 48, each over 2 NUMA nodes
  const auto per_die = topotree::cut(m.tree, 2);      // 8 x 24, one NUMA node each
  ASSERT_TRUE(per_package.spans_numa());
  ASSERT_FALSE(per_die.spans_numa());
  EXPECT_GT(sim.evaluate(per_package, Phase::Decode).ms,
            1.2 * sim.evaluate(per_die, Phase::Decode).ms);
  EXPECT_EQ(sim.rank_speeds(per_package)[0].numa_nodes, 2);
}

TEST(LatencySimulator, SmtSiblingsShareTheirCore) {
  const MachineDescription m = load_machine("xeon-gold-6230-2s");
  LatencySimulator sim(m.tree, *m.params, engine::load_preset("llama3-8b"), small_trace());
  const auto both_pus = topotree::cut(m.tree, 1);  // 2 x 40 PUs
  const auto one_pu =
      topotree::cut(topotree::apply_remove(m.tree, {.n = 1, .depth = m.tree.leaf_depth()}), 1);
  ASSERT_EQ(one_pu.threads_per_rank(), 20);
  const auto a = sim.rank_speeds(both_pus)[0], b = sim.rank_speeds(one_pu)[0];
  EXPECT_NEAR(a.gemm_gflops / b.gemm_gflops, m.params->smt_gain, 1e-9);
  EXPECT_NEAR(a.bandwidth_gbs, b.bandwidth_gbs, 1e-9);
}

TEST(LatencySimulator, BiggerDecodeBatchesAmortizeTheWeights) {
  const auto tree = topotree::load_topology("pack:1 core:2 pu:1").tree;
  WorkloadOptions w1, w16;
  w16.decode_batch = 16;
  LatencySimulator s1(tree, two_core_params(), engine::load_preset("llama-1.3b"), small_trace(),
                      w1);
  LatencySimulator s16(tree, two_core_params(), engine::load_preset("llama-1.3b"), small_trace(),
                       w16);
  const double t1 = s1.evaluate(config({{0, 1}}), Phase::Decode).ms,
               t16 = s16.evaluate(config({{0, 1}}), Phase::Decode).ms;
  EXPECT_GT(t16, t1);
  EXPECT_LT(t16, 4 * t1);
}

TEST(LatencySimulator, RejectsCpusOutsideTheMachine) {
  const auto tree = topotree::load_topology("pack:1 core:2 pu:1").tree;
  LatencySimulator sim(tree, two_core_params(), engine::load_preset("llama-160m"), small_trace());
  EXPECT_THROW(sim.evaluate(config({{0, 7}}), Phase::Decode), std::invalid_argument);
  RequestTrace empty;
  EXPECT_THROW(LatencySimulator(tree, two_core_params(), engine::load_preset("llama-160m"), empty),
               std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::tuner
