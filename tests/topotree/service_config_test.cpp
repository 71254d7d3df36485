// Service configurations as users give them, checked against this machine and against
// synthetic multi-NUMA machines.
#include "topotree/service_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "error_text.h"

namespace sandwich::topotree {
namespace {

// Two packages, each its own NUMA node, 4 cores of 2 PUs: PUs 0-7 on node 0, 8-15 on node 1.
const LoadedTopology& two_nodes() {
  static const LoadedTopology m = load_topology("pack:2 [numa] core:4 pu:2");
  return m;
}

std::string config_error(const std::string& text, const LoadedTopology& m = this_machine()) {
  return test::error_text<std::invalid_argument>([&] { parse_service_config(text, m); },
                                                 "(no error)");
}

TEST(ServiceConfigParse, ShortFormTakesTheMachinesCpusInOrder) {
  EXPECT_EQ(parse_service_config("2x1").to_string(), "2x1 [0] [1]");
  EXPECT_EQ(parse_service_config("1x2").to_string(), "1x2 [0-1]");
  const ServiceConfig c = parse_service_config("2x8", two_nodes());
  EXPECT_EQ(c.to_string(), "2x8 [0-7] [8-15]");
  EXPECT_EQ(c.ranks[1].numa, 1);
  EXPECT_FALSE(c.spans_numa());
  const ServiceConfig all = parse_service_config("1x16", two_nodes());
  EXPECT_TRUE(all.spans_numa());
  EXPECT_EQ(all.ranks[0].numa, -1);
  EXPECT_EQ(all.ranks[0].numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(all.ranks[0].memory_node(), 0);
}

TEST(ServiceConfigParse, JsonRoundTripsAndTakesNodesFromTheCpus) {
  const ServiceConfig j =
      parse_service_config(R"({"ranks":[{"numa":0,"cpus":[1]},{"numa":0,"cpus":[0]}]})");
  EXPECT_EQ(j.ranks[0].cpus, std::vector<int>{1});
  EXPECT_EQ(service_config_from_json(j.to_json()), j);
  const ServiceConfig k =
      parse_service_config(R"({"ranks":[{"cpus":[9,10]},{"cpus":[2]}]})", two_nodes());
  EXPECT_EQ(k.ranks[0].numa, 1);
  EXPECT_EQ(k.ranks[1].numa, 0);
  // CPUs as a list in Linux's form.
  const ServiceConfig l =
      parse_service_config(R"({"ranks":[{"cpus":"0-3,6"},{"cpus":"8-15"}]})", two_nodes());
  EXPECT_EQ(l.ranks[0].cpus, (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(l.ranks[1].numa, 1);
  // A rank across nodes keeps the node it was given for its memory, and says where it runs.
  const ServiceConfig span =
      parse_service_config(R"({"ranks":[{"numa":1,"cpus":[7,8]}]})", two_nodes());
  EXPECT_EQ(span.ranks[0].memory_node(), 1);
  EXPECT_TRUE(span.spans_numa());
  const nlohmann::json out = span.to_json();
  EXPECT_EQ(out["ranks"][0]["numa_nodes"], (nlohmann::json{0, 1}));
  EXPECT_EQ(service_config_from_json(out, two_nodes()), span);
}

TEST(ServiceConfigParse, MistakesAreRefusedWithTheReason) {
  EXPECT_NE(config_error("64x64").find("is more than this machine's"), std::string::npos);
  EXPECT_NE(config_error("0x1").find("at least 1"), std::string::npos);
  EXPECT_NE(config_error("two by one").find("neither RxT"), std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[0]},{"cpus":[0]}]})").find("given to two ranks"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[999]}]})").find("CPU 999 of rank 0 does not exist"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[16]}]})", two_nodes())
                .find("(this machine has CPUs 0-15)"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[]})").find("at least one rank"), std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":"0-"}]})").find("rank 0: \"cpus\" '0-'"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":7}]})").find("a list of CPU ids or a CPU list"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[]}]})").find("rank 0 has no CPUs"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"numa":2,"cpus":[0]}]})", two_nodes())
                .find("NUMA node 2 of rank 0 does not exist (this machine has nodes 0-1)"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"numa":99,"cpus":[0]}]})")
                .find("NUMA node 99 of rank 0 does not exist"),
            std::string::npos);
}

// Numbers that overflow or wrap are errors naming the value, never a wrapped CPU 0.
TEST(ServiceConfigParse, OutOfRangeNumbersAreClearErrors) {
  EXPECT_NE(config_error("65536x65536").find("65536 ranks is more than this machine's"),
            std::string::npos);
  EXPECT_NE(config_error("99999999999x1").find("99999999999"), std::string::npos);
  EXPECT_NE(config_error("1x99999999999999999999999").find("cores per rank"), std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[4294967296]}]})")
                .find("CPU id 4294967296 is out of range"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[-1]}]})").find("CPU id -1"), std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"cpus":[0.5]}]})").find("must be integers, got 0.5"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"numa":-7,"cpus":[0]}]})")
                .find("\"numa\" must be a NUMA node number"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"numa":"x","cpus":[0]}]})").find("got \"x\""),
            std::string::npos);
  EXPECT_NE(config_error(R"({"ranks":[{"numa":4294967296,"cpus":[0]}]})").find("4294967296"),
            std::string::npos);
  EXPECT_EQ(config_error(R"({"ranks":[{"numa":0,"cpus":[0]}]})"), "(no error)");
}

TEST(ServiceConfig, CanonicalFormOrdersCpusAndRanks) {
  ServiceConfig a;
  a.ranks = {{.numa = 0, .numa_nodes = {0}, .cpus = {5, 7, 4, 6}},
             {.numa = 0, .numa_nodes = {0}, .cpus = {2, 0, 3, 1}}};
  ServiceConfig b;
  b.ranks = {{.numa = 0, .numa_nodes = {0}, .cpus = {0, 1, 2, 3}},
             {.numa = 0, .numa_nodes = {0}, .cpus = {4, 5, 6, 7}}};
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a.canonical() == b);
  EXPECT_EQ(a.canonical().key(), b.key());
  a.canonicalize();
  EXPECT_TRUE(a == b);
}

TEST(ServiceConfigParse, CutsAndParsedConfigsAgree) {
  const LoadedTopology& m = two_nodes();
  const ServiceConfig per_package = cut(m.tree, 1);
  EXPECT_EQ(service_config_from_json(per_package.to_json(), m), per_package);
}

}  // namespace
}  // namespace sandwich::topotree
