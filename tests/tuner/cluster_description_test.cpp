// Cluster descriptors: N identical nodes and the link between them, shipped and hand-written.
#include <gtest/gtest.h>

#include <fstream>

#include "test_data.h"
#include "tuner/machine_description.h"

namespace sandwich::tuner {
namespace {

TEST(ClusterDescription, ShippedClustersLoadTheirNodeAndLink) {
  const MachineDescription node = load_machine("xeon-emr-16c");
  EXPECT_FALSE(node.cluster);
  EXPECT_EQ(node.tree.leaf_count(), 16);
  EXPECT_EQ(node.tree.numa_count(), 1);
  EXPECT_EQ(node.memory_bytes, 125ull << 30);
  for (const auto& [name, nodes, gbs] :
       std::vector<std::tuple<std::string, int, double>>{{"xeon-emr-16c-2n-25gbe", 2, 2.9},
                                                         {"xeon-emr-16c-4n-25gbe", 4, 2.9},
                                                         {"xeon-emr-16c-2n-100gbe", 2, 11.5},
                                                         {"xeon-emr-16c-4n-100gbe", 4, 11.5}}) {
    const MachineDescription m = load_machine(name);
    EXPECT_EQ(m.name, name);
    ASSERT_TRUE(m.cluster) << name;
    EXPECT_EQ(m.cluster->nodes, nodes);
    EXPECT_EQ(m.cluster->link.gbs, gbs);
    EXPECT_GT(m.cluster->link.latency_us, 0);
    EXPECT_EQ(m.tree.leaf_count(), 16) << "the tree is one node's";
    EXPECT_EQ(m.memory_bytes, node.memory_bytes);
    ASSERT_TRUE(m.params);
    EXPECT_EQ(m.params->numa_bw_gbs, node.params->numa_bw_gbs);
  }
}

TEST(ClusterDescription, LinkTransferIsLatencyPlusBytesOverBandwidth) {
  const NodeLink l{.name = "25GbE", .latency_us = 25, .gbs = 2.9};
  EXPECT_DOUBLE_EQ(l.transfer_s(0), 25e-6);
  // 512 tokens of an 8192-wide hidden state in f32: 16 MiB.
  EXPECT_DOUBLE_EQ(l.transfer_s(512.0 * 8192 * 4), 25e-6 + 16777216 / 2.9e9);
}

class BadCluster : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string write(const std::string& cluster) {
    const auto file = dir / "c.json";
    std::ofstream(file) << R"({"name": "c", "cluster": )" << cluster << "}";
    return file.string();
  }
  void expect_error(const std::string& cluster, const std::string& what) {
    try {
      load_machine(write(cluster));
      FAIL() << "accepted " << cluster;
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
};

TEST_F(BadCluster, OneLineErrorsNameWhatIsMissing) {
  const std::string link = R"("link": {"name": "x", "latency_us": 20, "gbs": 11.5})";
  expect_error(R"({"nodes": 0, "node": "xeon-emr-16c", )" + link + "}", "\"nodes\" must be 1");
  expect_error(R"({"node": "xeon-emr-16c", )" + link + "}", "needs \"nodes\"");
  expect_error(R"({"nodes": 2, "node": "xeon-emr-16c"})", "needs a \"link\"");
  expect_error(R"({"nodes": 2, "node": "xeon-emr-16c", "link": {"gbs": 2.9}})", "\"latency_us\"");
  expect_error(R"({"nodes": 2, "node": "xeon-emr-16c", "link": {"latency_us": 25}})", "\"gbs\"");
  expect_error(R"({"nodes": 2, "node": "xeon-emr-16c", "link": {"latency_us": 25, "gbs": -1}})",
               "positive");
  expect_error(R"({"nodes": 2, )" + link + "}", "needs \"node\"");
  expect_error(R"({"nodes": 2, "node": "no-such-machine", )" + link + "}", "no-such-machine");
  expect_error(R"({"nodes": 2, "node": "xeon-emr-16c-2n-25gbe", )" + link + "}", "one machine");
}

TEST_F(BadCluster, AnInlineNodeDescriptorWorks) {
  const MachineDescription m = load_machine(write(
      R"({"nodes": 3, "link": {"name": "x", "latency_us": 3, "gbs": 11.5},
          "node": {"topology": "pack:1 [numa(memory=1073741824)] core:4 pu:1",
                   "params": {"numa_bw_gbs": 72}}})"));
  ASSERT_TRUE(m.cluster);
  EXPECT_EQ(m.cluster->nodes, 3);
  EXPECT_EQ(m.cluster->link.name, "x");
  EXPECT_EQ(m.tree.leaf_count(), 4);
  EXPECT_EQ(m.memory_bytes, 1ull << 30);
}

}  // namespace
}  // namespace sandwich::tuner
