#include <gtest/gtest.h>

#include "topotree/hwloc_loader.h"
#include "topotree/merkle_hash.h"
#include "topotree/transforms.h"

namespace sandwich::topotree {
namespace {

// Two pairs of group transforms, a then b, that reach the same tree from a topology.
struct TwoWays {
  const char* name;
  const char* topology;
  GroupSpec a1, a2, b1, b2;
};

class MerkleHashTwoWays : public ::testing::TestWithParam<TwoWays> {};

TEST_P(MerkleHashTwoWays, ReachTheSameTreeAndHashAlike) {
  const TwoWays& w = GetParam();
  const TopoTree t = load_topology(w.topology).tree;
  const TopoTree a = apply_group(apply_group(t, w.a1), w.a2);
  const TopoTree b = apply_group(apply_group(t, w.b1), w.b2);
  EXPECT_TRUE(a.same_tree(b));
  EXPECT_EQ(tree_hash(a, HashMode::Structure), tree_hash(b, HashMode::Structure));
  EXPECT_EQ(tree_hash(a, HashMode::Placement), tree_hash(b, HashMode::Placement));
}

INSTANTIATE_TEST_SUITE_P(MerkleHash, MerkleHashTwoWays,
                         ::testing::Values(
                             // Group the packages, group the cores, in either order.
                             TwoWays{"GroupTransformsCommute",
                                     "pack:4 core:12 pu:1",
                                     {2, 1, 1},
                                     {3, 1, 3},
                                     {3, 1, 2},
                                     {2, 1, 1}},
                             // Pairs of pairs == fours split into pairs.
                             TwoWays{"NestedGroupsReachTheSameTreeTwoWays",
                                     "pack:1 core:8 pu:1",
                                     {2, 1, 1},
                                     {2, 1, 1},
                                     {4, 1, 1},
                                     {2, 1, 2}}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MerkleHash, StructureIgnoresPlacementButPlacementDoesNot) {
  const TopoTree t = load_topology("pack:1 core:8 pu:1").tree;
  const TopoTree contiguous = apply_group(t, {2, 1, 1});
  const TopoTree strided = apply_group(t, {2, 2, 1});
  EXPECT_EQ(tree_hash(contiguous, HashMode::Structure), tree_hash(strided, HashMode::Structure));
  EXPECT_NE(tree_hash(contiguous, HashMode::Placement), tree_hash(strided, HashMode::Placement));
  EXPECT_TRUE(equivalent(contiguous, strided, HashMode::Structure));
  EXPECT_FALSE(equivalent(contiguous, strided, HashMode::Placement));
}

TEST(MerkleHash, FeaturesAndShapeChangeTheHash) {
  const auto h = [](const std::string& s) {
    return tree_hash(load_topology(s).tree, HashMode::Structure);
  };
  EXPECT_NE(h("pack:2 core:4 pu:1"), h("pack:4 core:2 pu:1"));
  EXPECT_NE(h("pack:2 core:4 pu:1"), h("pack:2 [numa] core:4 pu:1"));
  EXPECT_NE(h("pack:2 l3:1(size=8MB) core:4 pu:1"), h("pack:2 l3:1(size=16MB) core:4 pu:1"));
  EXPECT_EQ(h("pack:2 core:4 pu:1"), h("pack:2 core:4 pu:1"));
  // A virtual group is not the physical level it imitates.
  const TopoTree g = apply_group(load_topology("pack:1 core:8 pu:1").tree, {4, 1, 1});
  EXPECT_NE(tree_hash(g, HashMode::Structure), h("pack:2 core:4 pu:1"));
}

}  // namespace
}  // namespace sandwich::topotree
