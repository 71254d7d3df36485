#include <gtest/gtest.h>

#include "tuner/machine_description.h"

namespace sandwich::tuner {
namespace {

TEST(MachineDescription, EveryShippedTopologyLoadsWithItsSpeeds) {
  const auto names = shipped_topology_names();
  const std::vector<std::pair<std::string, int>> expected{{"epyc7h12-2s", 256},
                                                          {"kunpeng920-4s", 192},
                                                          {"kunpeng920-4s-clusters", 192},
                                                          {"xeon-gold-6151-2s", 72},
                                                          {"xeon-gold-6230-2s", 80},
                                                          {"xeon-platinum-8272cl-2s", 96},
                                                          {"xeon-emr-16c", 16},
                                                          {"xeon-emr-16c-2n-25gbe", 16},
                                                          {"xeon-emr-16c-4n-25gbe", 16},
                                                          {"xeon-emr-16c-2n-100gbe", 16},
                                                          {"xeon-emr-16c-4n-100gbe", 16}};
  ASSERT_EQ(names.size(), expected.size());
  for (const auto& [name, pus] : expected) {
    const MachineDescription m = load_machine(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.tree.leaf_count(), pus) << name;
    ASSERT_TRUE(m.params.has_value()) << name;
    EXPECT_NO_THROW(m.params->validate());
    EXPECT_TRUE(m.notes.empty()) << name << ": " << m.notes[0];
    EXPECT_FALSE(m.local);
  }
  EXPECT_EQ(load_machine("kunpeng920-4s").tree.numa_count(), 8);
  EXPECT_EQ(load_machine("epyc7h12-2s").tree.numa_count(), 2);
  // The cluster view shares the plain view's speeds.
  EXPECT_EQ(load_machine("kunpeng920-4s-clusters").params->numa_bw_gbs,
            load_machine("kunpeng920-4s").params->numa_bw_gbs);
}

TEST(MachineDescription, ThisMachineAndRawHwlocInput) {
  const MachineDescription local = load_machine("");
  EXPECT_TRUE(local.local);
  EXPECT_FALSE(local.params.has_value());
  const MachineDescription syn = load_machine("pack:2 [numa] core:4 pu:2");
  EXPECT_FALSE(syn.local);
  EXPECT_EQ(syn.tree.leaf_count(), 16);
  EXPECT_FALSE(syn.params.has_value());
}

TEST(MachineDescription, UnknownNamesListTheShippedOnes) {
  try {
    load_machine("kunpeng");
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown topology 'kunpeng'"), std::string::npos) << m;
    EXPECT_NE(m.find("kunpeng920-4s"), std::string::npos) << m;
  }
  EXPECT_THROW(load_machine("pack:2 core:x"), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::tuner
