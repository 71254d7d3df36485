#include <gtest/gtest.h>

#include "topotree/hwloc_loader.h"
#include "topotree/transforms.h"
#include "topotree/tree_render.h"

namespace sandwich::topotree {
namespace {

TEST(TreeRender, LevelTableAndTextTree) {
  const TopoTree t = load_topology("pack:2 [numa] l3:4(size=16777216) core:4 pu:2").tree;
  const std::string table = level_table(t);
  EXPECT_NE(table.find("L3 (16MB)"), std::string::npos) << table;
  EXPECT_NE(table.find("<- NUMA memory"), std::string::npos) << table;
  const std::string text = text_tree(t, 2);
  EXPECT_NE(text.find("Package #1 [NUMA 1] (PUs 32-63)"), std::string::npos) << text;
  EXPECT_NE(text.find("... 2 more L3 like this (PUs 16-31)"), std::string::npos) << text;
  EXPECT_NE(text.find("Core #0: 2 x PU, PUs 0-1"), std::string::npos) << text;
  EXPECT_EQ(text_tree(t, 0).find("more"), std::string::npos);
}

TEST(TreeRender, DotHasEveryNodeAndEdge) {
  const TopoTree t = apply_group(load_topology("pack:2 core:4 pu:1").tree, {2, 1, 2});
  const std::string dot = dot_graph(t, "test \"machine\"");
  EXPECT_EQ(dot.rfind("digraph topotree {", 0), 0u);
  EXPECT_NE(dot.find("n3_7 [shape=ellipse"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n2_3 -> n3_7;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("dashed"), std::string::npos) << "virtual groups are drawn dashed";
  EXPECT_EQ(dot.find("\"machine\""), std::string::npos) << "quotes in the title are escaped";
}

TEST(TreeRender, Bytes) {
  EXPECT_EQ(format_bytes(16u << 20), "16MB");
  EXPECT_EQ(format_bytes(28835840), "27.5MB");
}

}  // namespace
}  // namespace sandwich::topotree
