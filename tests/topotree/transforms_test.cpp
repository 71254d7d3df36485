#include <gtest/gtest.h>

#include <set>

#include "common/cpu_list.h"
#include "topotree/hwloc_loader.h"
#include "topotree/service_config.h"
#include "topotree/transforms.h"

namespace sandwich::topotree {
namespace {

// One package of 8 cores, PUs 0-7.
TopoTree eight_cores() {
  return load_topology("pack:1 core:8 pu:1").tree;
}

TEST(Group, StrideTakesEveryTthNodeWithinATile) {
  const TopoTree t = apply_group(eight_cores(), {.n = 2, .t = 2, .depth = 1});
  ASSERT_EQ(t.level_count(), 3);
  EXPECT_EQ(t.level(1).arity, 4);
  EXPECT_EQ(t.level(2).arity, 2);
  // Tiles of n*t = 4 cores: {0,2} {1,3} {4,6} {5,7}.
  const ServiceConfig c = cut(t, 1);
  ASSERT_EQ(c.rank_count(), 4);
  EXPECT_EQ(c.ranks[0].cpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(c.ranks[1].cpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(c.ranks[2].cpus, (std::vector<int>{4, 6}));
  EXPECT_EQ(c.ranks[3].cpus, (std::vector<int>{5, 7}));
}

TEST(Group, ContiguousGroups) {
  const ServiceConfig c = cut(apply_group(eight_cores(), {.n = 4, .t = 1, .depth = 1}), 1);
  ASSERT_EQ(c.rank_count(), 2);
  EXPECT_EQ(c.ranks[1].cpus, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Group, RejectsWhatWouldNotBeSymmetric) {
  const TopoTree t = eight_cores();
  EXPECT_THROW(apply_group(t, {.n = 3, .t = 1, .depth = 1}),
               std::invalid_argument);  // 3 does not divide 8
  EXPECT_THROW(apply_group(t, {.n = 8, .t = 1, .depth = 1}),
               std::invalid_argument);  // all of them: no new level
  EXPECT_THROW(apply_group(t, {.n = 1, .t = 1, .depth = 1}), std::invalid_argument);
  EXPECT_THROW(apply_group(t, {.n = 2, .t = 3, .depth = 1}),
               std::invalid_argument);  // tiles of 6 in 8
  EXPECT_THROW(apply_group(t, {.n = 2, .t = 1, .depth = 2}),
               std::invalid_argument);  // no such depth
  try {
    apply_group(t, {.n = 3, .t = 1, .depth = 1});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("group(3,1,1)"), std::string::npos) << e.what();
  }
}

TEST(Group, GroupsStayInsideTheirParent) {
  // Two packages of 4 cores: groups of 2 never mix packages.
  const TopoTree t =
      apply_group(load_topology("pack:2 core:4 pu:1").tree, {.n = 2, .t = 2, .depth = 2});
  const ServiceConfig c = cut(t, 2);
  ASSERT_EQ(c.rank_count(), 4);
  EXPECT_EQ(c.ranks[2].cpus, (std::vector<int>{4, 6}));
}

TEST(Group, ValidGroupsListsDivisorsAndStrides) {
  std::set<std::string> got;
  for (const auto& g : valid_groups(eight_cores())) got.insert(g.to_string());
  EXPECT_EQ(got, (std::set<std::string>{"group(2,1,1)", "group(2,2,1)", "group(2,4,1)",
                                        "group(4,1,1)", "group(4,2,1)"}));
}

TEST(Remove, DropsTheRightMostChildrenOfEveryParent) {
  const TopoTree t = apply_remove(load_topology("pack:2 core:4 pu:2").tree, {.n = 1, .depth = 2});
  EXPECT_EQ(t.leaf_count(), 12);
  EXPECT_EQ(format_cpu_list(t.cpus()), "0-5,8-13");
  const TopoTree smt_off =
      apply_remove(load_topology("pack:2 core:4 pu:2").tree, {.n = 1, .depth = 3});
  EXPECT_EQ(format_cpu_list(smt_off.cpus()), "0,2,4,6,8,10,12,14");
}

TEST(Remove, RejectsRemovingEverything) {
  EXPECT_THROW(apply_remove(eight_cores(), {.n = 8, .depth = 1}), std::invalid_argument);
  EXPECT_THROW(apply_remove(eight_cores(), {.n = 0, .depth = 1}), std::invalid_argument);
}

TEST(Remove, AVirtualGroupLeftWithOneNodeDisappears) {
  const TopoTree g = apply_group(eight_cores(), {.n = 4, .t = 1, .depth = 1});
  const TopoTree r = apply_remove(g, {.n = 1, .depth = 1});
  EXPECT_EQ(r.level_count(), 2);
  EXPECT_EQ(r.leaf_count(), 4);
  // A physical level left with one node stays: its resource is still there.
  const TopoTree p = apply_remove(load_topology("pack:2 core:4 pu:1").tree, {.n = 1, .depth = 1});
  EXPECT_EQ(p.level_count(), 3);
}

}  // namespace
}  // namespace sandwich::topotree
