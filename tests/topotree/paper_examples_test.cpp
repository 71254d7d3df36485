// The paper's worked examples on the 4 x Kunpeng 920 machine (its sections 5.1-5.2, Figure 6).
#include <gtest/gtest.h>

#include <map>

#include "common/cpu_list.h"
#include "topotree/service_config.h"
#include "topotree/transforms.h"
#include "topotree_fixtures.h"

namespace sandwich::topotree {
namespace {

using test::shipped_tree;

constexpr int kCoreDepth = 3;  // Machine, Package, Die+L3, Core

TEST(PaperExamples, KunpengWithoutClustersIsFourPackagesOfTwoDiesOf24Cores) {
  const TopoTree t = shipped_tree("kunpeng920-4s");
  ASSERT_EQ(t.level_count(), 4);
  EXPECT_EQ(t.level(1).arity, 4);
  EXPECT_EQ(t.level(2).arity, 2);
  EXPECT_TRUE(t.level(2).numa_memory);
  EXPECT_EQ(t.level(2).cache_bytes, 24u << 20);
  EXPECT_EQ(t.level(kCoreDepth).arity, 24);
  EXPECT_EQ(t.leaf_count(), 192);
  EXPECT_EQ(t.numa_count(), 8);
}

TEST(PaperExamples, GroupOfFourRecoversTheClusters) {
  const TopoTree flat = shipped_tree("kunpeng920-4s");
  const TopoTree clusters = shipped_tree("kunpeng920-4s-clusters");
  ASSERT_EQ(clusters.level_count(), 5);
  EXPECT_EQ(clusters.level(3).label, "Cluster");
  EXPECT_EQ(clusters.level(3).arity, 6);

  const TopoTree grouped = apply_group(flat, {.n = 4, .t = 1, .depth = kCoreDepth});
  ASSERT_EQ(grouped.level_count(), 5);
  EXPECT_TRUE(grouped.level(3).virtual_group);
  EXPECT_EQ(grouped.level(3).arity, 6);  // six clusters per die
  EXPECT_EQ(grouped.level(4).arity, 4);  // four cores per cluster
  // Every level cuts into the same ranks as the view where the OS shows the clusters.
  for (int d = 0; d <= 4; ++d) EXPECT_EQ(cut(grouped, d), cut(clusters, d)) << "depth " << d;
}

TEST(PaperExamples, RemoveOnePerClusterKeepsThreeOfEveryFourCores) {
  const TopoTree grouped =
      apply_group(shipped_tree("kunpeng920-4s"), {.n = 4, .t = 1, .depth = kCoreDepth});
  const TopoTree removed = apply_remove(grouped, {.n = 1, .depth = 4});
  EXPECT_EQ(removed.leaf_count(), 144);
  EXPECT_EQ(removed.level(4).arity, 3);
  for (int cpu : removed.cpus())
    EXPECT_NE(cpu % 4, 3) << "the right-most core of each cluster is removed";
  EXPECT_EQ(removed.history_string(), "group(4,1,3) remove(1,4)");
  // The same on the view with visible clusters.
  const TopoTree removed2 =
      apply_remove(shipped_tree("kunpeng920-4s-clusters"), {.n = 1, .depth = 4});
  EXPECT_TRUE(std::equal(removed.cpus().begin(), removed.cpus().end(), removed2.cpus().begin(),
                         removed2.cpus().end()));
}

// Figure 6: board x1 - CPU x4 - die (NUMA) x2 - cluster x6 - core x3 after the remove.
TopoTree figure6() {
  return apply_remove(shipped_tree("kunpeng920-4s-clusters"), {.n = 1, .depth = 4});
}

TEST(PaperExamples, Figure6CutAtDieLevelIsEightRanksOf18CoresOneNumaNodeEach) {
  const ServiceConfig c = cut(figure6(), 2);
  ASSERT_EQ(c.rank_count(), 8);
  std::set<int> numa;
  for (const Rank& r : c.ranks) {
    EXPECT_EQ(r.cpus.size(), 18u);
    EXPECT_GE(r.numa, 0);
    numa.insert(r.numa);
  }
  EXPECT_EQ(numa.size(), 8u);
  EXPECT_EQ(c.placement(), "8 ranks on NUMA 0-7 (1 each)");
  EXPECT_EQ(format_cpu_list(c.ranks[0].cpus), "0-2,4-6,8-10,12-14,16-18,20-22");
}

TEST(PaperExamples, Figure6CutAtClusterLevelIs48RanksOf3CoresSixPerNumaNode) {
  const ServiceConfig c = cut(figure6(), 3);
  ASSERT_EQ(c.rank_count(), 48);
  std::map<int, int> per_numa;
  for (const Rank& r : c.ranks) {
    EXPECT_EQ(r.cpus.size(), 3u);
    ASSERT_GE(r.numa, 0);
    ++per_numa[r.numa];
  }
  EXPECT_EQ(per_numa.size(), 8u);
  for (auto [node, ranks] : per_numa) EXPECT_EQ(ranks, 6) << "NUMA node " << node;
  EXPECT_EQ(c.placement(), "48 ranks on NUMA 0-7 (6 each)");
}

TEST(PaperExamples, Figure6OtherCuts) {
  const TopoTree t = figure6();
  EXPECT_EQ(cut(t, 0).rank_count(), 1);
  EXPECT_EQ(cut(t, 0).threads_per_rank(), 144);
  EXPECT_EQ(cut(t, 0).ranks[0].numa, -1);
  EXPECT_EQ(cut(t, 1).rank_count(), 4);  // one rank per CPU, each over two NUMA nodes
  EXPECT_EQ(cut(t, 1).ranks[0].numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(cut(t, 4).rank_count(), 144);
  EXPECT_EQ(all_cuts(t).size(), 5u);
}

}  // namespace
}  // namespace sandwich::topotree
