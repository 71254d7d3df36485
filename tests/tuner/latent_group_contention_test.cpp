// The simulator's latent group term (the paper's Figure 3a): cores of a group the OS does not
// show share its bandwidth, so configurations that spread ranks over the groups predict faster
// than those that pack them; no latent group, or one that never binds, changes nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "topotree/hwloc_loader.h"
#include "topotree/service_config.h"
#include "topotree/transforms.h"
#include "tuner/config_search.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"

#include "small_trace.h"

namespace sandwich::tuner {
namespace {

using test::small_trace;

// The Kunpeng 920 without its clusters in the tree, and its published figures without the
// latent group its descriptor ships.
MachineParams without_latent_group() {
  MachineParams p = *load_machine("kunpeng920-4s").params;
  p.latent_group = {};
  return p;
}

// With a calibrated latent group as the probe would report it: 4 consecutive cores sharing
// bw_gbs.
MachineParams with_latent_group(double bw_gbs) {
  MachineParams p = without_latent_group();
  p.latent_group = {.cores = 4, .stride = 1, .bw_gbs = bw_gbs};
  return p;
}

struct Kunpeng {
  topotree::TopoTree tree = load_machine("kunpeng920-4s").tree;
  // Both 8 ranks x 12 cores, one rank per die: the first 12 cores of each die (3 clusters
  // full), or every other core (2 cores in each of the 6 clusters).
  topotree::ServiceConfig packed =
      topotree::cut(topotree::apply_remove(tree, {.n = 12, .depth = 3}), 2);
  topotree::ServiceConfig spread = topotree::cut(
      topotree::apply_remove(topotree::apply_group(tree, {.n = 2, .t = 1, .depth = 3}),
                             {.n = 1, .depth = 4}),
      2);
};

TEST(LatentGroupContention, SpreadingOverLatentGroupsBeatsPackingThem) {
  const Kunpeng k;
  ASSERT_EQ(k.packed.threads_per_rank(), 12);
  ASSERT_EQ(k.spread.threads_per_rank(), 12);
  ASSERT_EQ(k.packed.rank_count(), 8);
  ASSERT_EQ(k.spread.rank_count(), 8);
  LatencySimulator sim(k.tree, with_latent_group(20), engine::load_preset("llama3-8b"),
                       small_trace());
  EXPECT_EQ(sim.busiest_latent_group(k.packed), 4);
  EXPECT_EQ(sim.busiest_latent_group(k.spread), 2);
  const double packed = sim.evaluate(k.packed, Phase::Decode).ms;
  const double spread = sim.evaluate(k.spread, Phase::Decode).ms;
  EXPECT_LT(spread, 0.9 * packed);
  // Packed: three saturated groups deliver 60 of the die's 75 GB/s; spread reaches the die's.
  EXPECT_LT(sim.rank_speeds(k.packed)[0].bandwidth_gbs, 61);
  EXPECT_GT(sim.rank_speeds(k.spread)[0].bandwidth_gbs,
            sim.rank_speeds(k.packed)[0].bandwidth_gbs * 1.1);
  EXPECT_NE(sim.latent_group_summary().find("under each Die+L3 (48 groups)"), std::string::npos)
      << sim.latent_group_summary();
}

TEST(LatentGroupContention, NeutralWithoutALatentGroup) {
  const Kunpeng k;
  LatencySimulator sim(k.tree, without_latent_group(), engine::load_preset("llama3-8b"),
                       small_trace());
  EXPECT_DOUBLE_EQ(sim.evaluate(k.spread, Phase::Decode).ms,
                   sim.evaluate(k.packed, Phase::Decode).ms);
  EXPECT_EQ(sim.busiest_latent_group(k.packed), 0);
  EXPECT_EQ(sim.latent_group_summary(), "");
}

std::vector<std::pair<topotree::ServiceConfig, double>> ranking(const MachineParams& p, Phase ph) {
  const MachineDescription m = load_machine("kunpeng920-4s");
  LatencySimulator sim(m.tree, p, engine::load_preset("llama3-8b"), small_trace());
  SearchOptions o;
  o.phase = ph;
  std::vector<std::pair<topotree::ServiceConfig, double>> out;
  for (const auto& rc : search_configs(m.tree, engine::load_preset("llama3-8b"), sim, o).ranked)
    out.emplace_back(rc.config, rc.prediction.ms);
  return out;
}

TEST(LatentGroupContention, TheSearchFindsTheSpreadConfiguration) {
  const Kunpeng k;
  const auto before = ranking(without_latent_group(), Phase::Decode);
  const auto after = ranking(with_latent_group(20), Phase::Decode);
  LatencySimulator sim(k.tree, with_latent_group(20), engine::load_preset("llama3-8b"),
                       small_trace());
  // Without the term the packed and spread configurations tie, and the packed one comes first;
  // with it, the best configuration leaves room in every latent group.
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(before[0].first, k.packed);
  EXPECT_EQ(sim.busiest_latent_group(before[0].first), 4);
  EXPECT_LT(sim.busiest_latent_group(after[0].first), 4);
  EXPECT_EQ(after[0].first, k.spread);
}

TEST(LatentGroupContention, AGroupThatNeverBindsChangesNoRanking) {
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    const auto before = ranking(without_latent_group(), ph);
    const auto after = ranking(with_latent_group(1e6), ph);
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(before[i].first, after[i].first) << phase_name(ph) << " #" << i;
      EXPECT_DOUBLE_EQ(before[i].second, after[i].second) << phase_name(ph) << " #" << i;
    }
  }
}

TEST(LatentGroupContention, AGroupThatDoesNotTileTheCoresIsRefused) {
  MachineParams p = with_latent_group(20);
  p.latent_group.cores = 5;  // 24 cores per die
  const MachineDescription m = load_machine("kunpeng920-4s");
  try {
    LatencySimulator(m.tree, p, engine::load_preset("llama3-8b"), small_trace());
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the 24 cores under each Die+L3"),
              std::string::npos)
        << e.what();
  }
  // A one-core tree has nothing above its cores to group under.
  p.latent_group.cores = 2;
  EXPECT_THROW(LatencySimulator(topotree::load_topology("pack:1 core:1 pu:1").tree, p,
                                engine::load_preset("llama-160m"), small_trace()),
               std::invalid_argument);
}

// The same machine as an OS that shows clusters sees it: the latent group is the cluster.
TEST(LatentGroupContention, ClustersShownByTheOsAreTheSameGroups) {
  const MachineDescription flat = load_machine("kunpeng920-4s");
  const MachineDescription shown = load_machine("kunpeng920-4s-clusters");
  LatencySimulator a(flat.tree, with_latent_group(20), engine::load_preset("llama3-8b"),
                     small_trace());
  LatencySimulator b(shown.tree, with_latent_group(20), engine::load_preset("llama3-8b"),
                     small_trace());
  const Kunpeng k;
  for (const auto* c : {&k.packed, &k.spread})
    EXPECT_DOUBLE_EQ(a.evaluate(*c, Phase::Decode).ms, b.evaluate(*c, Phase::Decode).ms);
}

}  // namespace
}  // namespace sandwich::tuner
