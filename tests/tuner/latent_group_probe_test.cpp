// The calibration probe for a latent shared resource: which CPUs it streams from (a function of
// the tree) and what it concludes from the bandwidths (a function of the numbers), apart from
// any timing.
#include "tuner/latent_group_probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "topotree/hwloc_loader.h"
#include "topotree/transforms.h"
#include "tuner/calibration.h"
#include "tuner/machine_description.h"

namespace sandwich::tuner {
namespace {

LatentGroupProbe measured(int cores, int stride, double packed, double spread) {
  LatentGroupProbe p;
  p.cores = cores;
  p.stride = stride;
  p.packed_gbs = packed;
  p.spread_gbs = spread;
  return p;
}

TEST(LatentGroupProbe, KunpengCandidatesPackOneTransformGroupAndSpreadOverTheOthers) {
  const topotree::TopoTree tree = load_machine("kunpeng920-4s").tree;
  const int cd = topotree::core_depth(tree);
  const auto candidates = latent_group_candidates(tree);
  // Consecutive and interleaved groupings of a die's 24 cores: n = 2, 3, 4, 6, 8, 12 each.
  ASSERT_EQ(candidates.size(), 12u);
  for (const auto& c : candidates) {
    SCOPED_TRACE("group(" + std::to_string(c.cores) + "," + std::to_string(c.stride) + ")");
    EXPECT_TRUE(c.stride == 1 || c.cores * c.stride == 24);
    ASSERT_EQ(c.packed.size(), static_cast<size_t>(c.cores));
    ASSERT_EQ(c.spread.size(), static_cast<size_t>(c.cores));
    // Packed is the first group the transform invents on die 0.
    const topotree::TopoTree grouped = topotree::apply_group(tree, {c.cores, c.stride, cd});
    auto first = grouped.node_cpus(cd, 0);
    std::vector<int> packed = c.packed, group(first.begin(), first.end());
    std::sort(packed.begin(), packed.end());
    std::sort(group.begin(), group.end());
    EXPECT_EQ(packed, group);
    // Spread: distinct cores of die 0 over as many of those groups as there are cores, evenly.
    std::map<int64_t, int> per_group;
    for (int cpu : c.spread) {
      ASSERT_GE(cpu, 0);
      ASSERT_LT(cpu, 24);
      for (int64_t g = 0; g < grouped.nodes_at(cd); ++g) {
        auto cpus = grouped.node_cpus(cd, g);
        if (std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) ++per_group[g];
      }
    }
    EXPECT_EQ(std::set<int>(c.spread.begin(), c.spread.end()).size(), c.spread.size());
    const int groups = 24 / c.cores;
    EXPECT_EQ(per_group.size(), static_cast<size_t>(std::min(groups, c.cores)));
    for (const auto& [g, n] : per_group) EXPECT_LE(n, (c.cores + groups - 1) / groups);
  }
  // The Kunpeng clusters: cores 0-3 packed against one core of each of four clusters.
  const auto four = std::find_if(candidates.begin(), candidates.end(),
                                 [](const auto& c) { return c.cores == 4 && c.stride == 1; });
  ASSERT_NE(four, candidates.end());
  EXPECT_EQ(four->packed, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(four->spread, (std::vector<int>{0, 4, 12, 16}));
  EXPECT_TRUE(latent_group_candidates(tree, 3).size() < candidates.size()) << "max_threads";
}

TEST(LatentGroupProbe, NoCandidateOnATwoCoreMachine) {
  // Like the development machine: two cores under one L3, nothing a group transform can form.
  EXPECT_TRUE(
      latent_group_candidates(topotree::load_topology("pack:1 l3:1 core:2 pu:1").tree).empty());
  EXPECT_FALSE(latent_group_from_probes({}).active());
}

TEST(LatentGroupProbe, TheGroupingPackingCostsMostIsTheLatentGroup) {
  // Figures shaped like a die of 4-core clusters sharing a 30 GB/s L3 tag.
  const std::vector<LatentGroupProbe> probes = {
      measured(2, 1, 29, 31),  measured(4, 1, 30, 62), measured(8, 1, 58, 72),
      measured(2, 12, 31, 31), measured(4, 6, 61, 62), measured(6, 1, 0, 70)};  // last: unmeasured
  const LatentGroupParams g = latent_group_from_probes(probes);
  ASSERT_TRUE(g.active());
  EXPECT_EQ(g.cores, 4);
  EXPECT_EQ(g.stride, 1);
  EXPECT_DOUBLE_EQ(g.bw_gbs, 30);
  EXPECT_EQ(g.describe(), "groups of 4 cores (stride 1), 30.0 GB/s each");
}

TEST(LatentGroupProbe, DifferencesWithinNoiseAreNeutral) {
  const double just_within = 20 * (1 - kLatentGroupMinLoss) + 0.01;
  EXPECT_FALSE(latent_group_from_probes({measured(2, 1, just_within, 20), measured(4, 1, 40, 40),
                                         measured(3, 1, 45, 40)})
                   .active());
  EXPECT_TRUE(latent_group_from_probes({measured(2, 1, just_within - 0.1, 20)}).active());
}

TEST(LatentGroupProbe, RecordRoundTrip) {
  LatentGroupProbe p = measured(4, 1, 30, 60);
  p.packed = {0, 1, 2, 3};
  p.spread = {0, 4, 12, 16};
  const LatentGroupProbe q = LatentGroupProbe::from_json(p.to_json());
  EXPECT_EQ(q.packed, p.packed);
  EXPECT_EQ(q.spread, p.spread);
  EXPECT_DOUBLE_EQ(q.packed_gbs, 30);
  EXPECT_EQ(q.cores, 4);
  nlohmann::json bad = p.to_json();
  bad["cores"] = 1;
  EXPECT_THROW(LatentGroupProbe::from_json(bad), std::invalid_argument);
}

TEST(LatentGroupProbe, MeasuringFillsBothFigures) {
  std::vector<LatentGroupProbe> probes = {measured(2, 1, 0, 0)};
  probes[0].packed = probes[0].spread = {0};
  measure_latent_groups(probes, 4u << 20);
  EXPECT_GT(probes[0].packed_gbs, 0.5);
  EXPECT_GT(probes[0].spread_gbs, 0.5);
}

}  // namespace
}  // namespace sandwich::tuner
