#include <gtest/gtest.h>

#include <map>
#include <set>

#include "topotree/hwloc_loader.h"
#include "topotree/merkle_hash.h"
#include "topotree/service_config.h"
#include "topotree/transform_tree.h"
#include "topotree_fixtures.h"

namespace sandwich::topotree {
namespace {

// Group transforms only: the all-core trees.
ExploreOptions groups_only(HashMode hash = HashMode::Structure) {
  ExploreOptions o;
  o.removes = false;
  o.hash = hash;
  return o;
}

// No group transforms: the fundamental tree and its removes.
ExploreOptions no_groups() {
  ExploreOptions o;
  o.max_group_levels = 0;
  return o;
}

// Explores the transforms of a synthetic topology such as "pack:1 core:8 pu:1".
ExploreStats explore(const std::string& topology, const ExploreOptions& o,
                     const TreeVisitor& visit) {
  return explore_transforms(load_topology(topology).tree, o, visit);
}

TEST(TransformTree, GroupClosureVisitsEachTreeOnce) {
  // 8 cores: shapes 8 | 2x4 | 4x2 | 2x2x2 -> 4 trees (structure), strides deduplicated.
  std::set<uint64_t> seen;
  const ExploreStats st =
      explore("pack:1 core:8 pu:1", groups_only(), [&](const TopoTree& tree, const VisitInfo& v) {
        EXPECT_TRUE(v.all_cores);
        EXPECT_TRUE(seen.insert(tree_hash(tree, HashMode::Structure)).second)
            << "visited twice: " << tree.history_string();
        return 1.0;
      });
  EXPECT_EQ(st.group_trees, 4);
  EXPECT_EQ(st.remove_trees, 0);
  EXPECT_GT(st.deduplicated, 0);
  EXPECT_EQ(st.explored(), 4);
}

TEST(TransformTree, PlacementHashKeepsStridedGroupings) {
  const ExploreStats st = explore("pack:1 core:8 pu:1", groups_only(HashMode::Placement),
                                  [](const TopoTree&, const VisitInfo&) { return 1.0; });
  EXPECT_GT(st.group_trees, 4);
}

TEST(TransformTree, BoundsStopTheExplorationAndSaySo) {
  int visits = 0;
  auto count = [&](const TopoTree&, const VisitInfo&) {
    ++visits;
    return 1.0;
  };
  ExploreOptions o;
  o.hash = HashMode::Placement;
  o.max_trees = 5;
  ExploreStats st = explore("pack:1 core:8 pu:1", o, count);
  EXPECT_TRUE(st.truncated);
  EXPECT_LE(st.explored(), 5);
  // Out of time: nothing more is generated, and the removes still queued are not visited.
  o.max_trees = 1000000;
  o.max_seconds = 1e-9;
  visits = 0;
  st = explore("pack:1 core:8 pu:1", o, count);
  EXPECT_TRUE(st.truncated);
  EXPECT_EQ(st.remove_trees, 0);
  EXPECT_EQ(visits, st.explored());
  o.max_seconds = 0;  // no limit
  EXPECT_FALSE(explore("pack:1 core:8 pu:1", o, count).truncated);
}

TEST(TransformTree, RemovesAreVisitedAfterEveryTreeTheyComeFrom) {
  std::vector<int64_t> leaves;
  const ExploreStats st =
      explore("pack:2 core:6 pu:1", {}, [&](const TopoTree& tree, const VisitInfo& v) {
        if (!v.all_cores) leaves.push_back(tree.leaf_count());
        return static_cast<double>(tree.leaf_count());  // every remove "improves": nothing pruned
      });
  EXPECT_EQ(st.pruned, 0);
  EXPECT_TRUE(std::is_sorted(leaves.rbegin(), leaves.rend())) << "more PUs first";
  // 2x6 -> group trees 2x6, 2x2x3, 2x3x2; removes reach every (packages, cores) combination.
  EXPECT_EQ(st.group_trees, 3);
  EXPECT_GT(st.remove_trees, 10);
}

TEST(TransformTree, ARemoveThatDoesNotImprovePrunesItsDescendants) {
  // The fundamental tree only: removes give 7, 6, ..., 1 cores.
  std::vector<int64_t> visited;
  // Scores best at 6 cores: 8 -> 7 -> 6 improve, 5 does not.
  auto score = [](int64_t cores) { return std::abs(static_cast<double>(cores) - 6.0); };
  const ExploreStats st =
      explore("pack:1 core:8 pu:1", no_groups(), [&](const TopoTree& tree, const VisitInfo&) {
        visited.push_back(tree.leaf_count());
        return score(tree.leaf_count());
      });
  // From 8 every remove(n) is generated at once (7..1 cores), so all are visited; only 7 and 6
  // improve on every tree they come from and get expanded (their children are duplicates).
  EXPECT_EQ(st.group_trees, 1);
  EXPECT_EQ(st.remove_trees, 7);
  EXPECT_EQ(st.pruned, 5);
  EXPECT_EQ(visited.front(), 8);
}

TEST(TransformTree, PruningStopsADeepChain) {
  // Two levels: removes of packages and of cores; score only likes more packages.
  int visits = 0;
  const ExploreStats st =
      explore("pack:4 core:2 pu:1", no_groups(), [&](const TopoTree& tree, const VisitInfo&) {
        ++visits;
        return -static_cast<double>(
            tree.nodes_at(1));  // fewer packages is worse; fewer cores per package is no better
      });
  EXPECT_EQ(st.pruned, st.remove_trees);  // no remove ever improves
  EXPECT_EQ(st.remove_trees,
            4);  // only the fundamental tree's own children: 3 package removes + 1 core remove
  EXPECT_EQ(visits, 5);
}

TEST(TransformTree, KunpengExploresQuickly) {
  const TopoTree t = test::shipped_tree("kunpeng920-4s");
  int64_t n = 0;
  const ExploreStats st = explore_transforms(t, {}, [&](const TopoTree& tree, const VisitInfo&) {
    ++n;
    return -static_cast<double>(
        tree.leaf_count());  // more cores is better: only group trees expand
  });
  EXPECT_EQ(st.explored(), n);
  EXPECT_EQ(st.group_trees, 40);  // 2 shapes above the dies x 20 ordered factorizations of 24
  EXPECT_EQ(st.pruned, st.remove_trees);
}

}  // namespace
}  // namespace sandwich::topotree
