#include <gtest/gtest.h>
#include <hwloc.h>
#include <unistd.h>

#include "common/cpu_list.h"
#include "test_data.h"
#include "topotree/hwloc_loader.h"
#include "topotree_fixtures.h"

namespace sandwich::topotree {
namespace {

TEST(HwlocLoader, SyntheticStringMergesSingleChildLevels) {
  const LoadedTopology l = load_topology("pack:2 [numa] l3:16 l2:4 core:1 pu:2");
  const TopoTree& t = l.tree;
  ASSERT_EQ(t.level_count(), 5);
  EXPECT_EQ(t.level(0).label, "Machine");
  EXPECT_EQ(t.level(1).label, "Package");
  EXPECT_TRUE(t.level(1).numa_memory);
  EXPECT_EQ(t.level(2).label, "L3");
  EXPECT_EQ(t.level(3).label, "L2+Core");
  EXPECT_EQ(t.level(4).label, "PU");
  EXPECT_EQ(t.leaf_count(), 256);
  EXPECT_EQ(t.numa_count(), 2);
  EXPECT_TRUE(l.notes.empty());
  EXPECT_EQ(l.source, "synthetic: pack:2 [numa] l3:16 l2:4 core:1 pu:2");
  // PUs in hwloc's logical order: the two PUs of core 0 first.
  EXPECT_EQ(t.cpus()[0], 0);
  EXPECT_EQ(t.cpus()[1], 1);
  EXPECT_EQ(t.node_numa(1, 1), 1);
}

TEST(HwlocLoader, InvalidSyntheticStringIsAClearError) {
  try {
    load_topology("pack:2 banana:3 pu:2");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("invalid topology 'pack:2 banana:3 pu:2'"), std::string::npos) << m;
    EXPECT_NE(m.find("example"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
  EXPECT_THROW(load_topology("pack:0 pu:1"), std::invalid_argument);
}

// hwloc would spend hours building 10^13 objects: the size is checked before it starts.
TEST(HwlocLoader, HugeSyntheticTopologyIsRejectedQuickly) {
  for (const char* spec :
       {"pack:99999 core:99999 pu:999", "pack:2 [numa(memory=1000)] core:32768 pu:2",
        "99999999999999999999999 2", "pu:65537"}) {
    try {
      load_topology(spec);
      FAIL() << spec;
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("describes more than 65536 PUs"), std::string::npos) << m;
      EXPECT_NE(m.find(spec), std::string::npos) << m;
    }
  }
  // Attributes and attached memory do not count as levels.
  EXPECT_EQ(
      load_topology("pack:2 [numa(memory=1000)] l3:2(size=1048576) core:2 pu:2").tree.leaf_count(),
      16);
}

TEST(HwlocLoader, ThisMachine) {
  const LoadedTopology l = load_topology("");
  EXPECT_EQ(l.source, "this machine");
  EXPECT_GE(l.tree.leaf_count(), 1);
  EXPECT_LE(l.tree.leaf_count(), sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(l.tree.numa_count(), 1);
}

TEST(HwlocLoader, ShippedXmlWithClusters) {
  const LoadedTopology l = load_topology(test::shipped_topology_spec("kunpeng920-4s-clusters"));
  EXPECT_EQ(l.source.rfind("XML: ", 0), 0u);
  EXPECT_EQ(l.tree.leaf_count(), 192);
  EXPECT_EQ(l.tree.level(2).label, "Die+L3");
  EXPECT_EQ(l.tree.level(3).label, "Cluster");
}

TEST(HwlocLoader, BrokenXmlIsAClearError) {
  sandwich::test::TempDir dir;
  const auto bad = dir / "bad.xml";
  std::ofstream(bad) << "<topology><object type=\"Machine\">";
  EXPECT_THROW(load_topology(bad.string()), std::invalid_argument);
}

// hwloc reads an XML file whole: one larger than a topology's limit (a sparse file here) is
// refused before it does.
TEST(HwlocLoader, AnOversizedXmlIsRefusedBeforeHwlocReadsIt) {
  sandwich::test::TempDir dir;
  const auto big = dir / "big.xml";
  std::ofstream(big) << "<topology>";
  std::filesystem::resize_file(big, (std::uintmax_t{64} << 20) + 1);
  try {
    load_topology(big.string());
    FAIL() << "loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "topology XML " + big.string() +
                                         ": larger than 64 MiB (the limit for a topology XML)");
  }
}

// An XML file of a machine whose second package lost a core: hwloc's restrict drops PU 7 of a
// 2 x 4 machine, and the XML export is what lstopo would write on such a machine.
TEST(HwlocLoader, AsymmetricMachineKeepsItsLargestSymmetricPart) {
  sandwich::test::TempDir dir;
  const auto xml = dir / "asym.xml";
  hwloc_topology_t topo;
  ASSERT_EQ(hwloc_topology_init(&topo), 0);
  ASSERT_EQ(hwloc_topology_set_synthetic(topo, "pack:2 [numa] core:4 pu:1"), 0);
  ASSERT_EQ(hwloc_topology_load(topo), 0);
  hwloc_bitmap_t keep = hwloc_bitmap_alloc();
  hwloc_bitmap_set_range(keep, 0, 6);
  ASSERT_EQ(hwloc_topology_restrict(topo, keep, 0), 0);
  ASSERT_EQ(hwloc_topology_export_xml(topo, xml.c_str(), 0), 0);
  hwloc_bitmap_free(keep);
  hwloc_topology_destroy(topo);

  const LoadedTopology l = load_topology(xml.string());
  EXPECT_EQ(l.all_cpus.size(), 7u);
  EXPECT_EQ(l.tree.leaf_count(), 6);  // 2 packages x 3 cores beats 1 package x 4
  EXPECT_EQ(l.tree.level(1).arity, 2);
  EXPECT_EQ(l.tree.level(2).arity, 3);
  EXPECT_EQ(format_cpu_list(l.tree.cpus()), "0-2,4-6");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("asymmetric machine"), std::string::npos) << l.notes[0];
  EXPECT_NE(l.notes[0].find("6 of 7 PUs"), std::string::npos) << l.notes[0];
}

}  // namespace
}  // namespace sandwich::topotree
