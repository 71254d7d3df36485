// sandwich-tune as a user runs it: output, JSON, errors on one line with a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/service_config.h"
#include "test_data.h"

namespace sandwich::tuner {
namespace {

struct ToolRun {
  int rc = -1;
  std::string out;  // stdout and stderr
};

ToolRun tune(const std::string& args) {
  const std::string cmd =
      (sandwich::test::bin_dir() / "sandwich-tune").string() + " " + args + " 2>&1";
  ToolRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void expect_one_line_error(const ToolRun& r, const std::string& what) {
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("sandwich-tune: error: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find(what), std::string::npos) << r.out;
}

TEST(TuneCli, TopologyTextAndDot) {
  sandwich::test::TempDir dir;
  const ToolRun r = tune("topology --topology kunpeng920-4s --dot " + (dir / "t.dot").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("Die+L3 (24MB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("192 in 8 NUMA nodes"), std::string::npos) << r.out;
  std::ifstream dot(dir / "t.dot");
  const std::string text((std::istreambuf_iterator<char>(dot)), {});
  EXPECT_EQ(text.rfind("digraph", 0), 0u);
  EXPECT_NE(text.find("PU 191"), std::string::npos);
}

TEST(TuneCli, ConfigsJsonIsUsableByTheEngine) {
  SANDWICH_REQUIRE_DATA();
  // This machine: the configs name CPUs that exist here, so the engine's parser accepts them.
  const ToolRun r =
      tune("configs --model llama-160m --phase decode --top-k 3 --json --params " +
           (sandwich::test::source_dir() / "configs/topologies/xeon-gold-6230-2s.json").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& configs = j["phases"]["decode"]["configs"];
  ASSERT_GE(configs.size(), 1u);
  for (const auto& c : configs) {
    EXPECT_NO_THROW(service_config_from_json(c["config"])) << c.dump();
    EXPECT_GT(c["predicted_ms"].get<double>(), 0);
  }
  EXPECT_GE(j["phases"]["decode"]["stats"]["configs_evaluated"].get<int>(), 1);
  EXPECT_FALSE(j["phases"].contains("prefill"));
}

TEST(TuneCli, ConfigsTextShowsRankingAndStatistics) {
  const ToolRun r =
      tune("configs --model llama3-8b --topology kunpeng920-4s --top-k 3 --trace-samples 16");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("prefill: top 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode: top 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trees explored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned"), std::string::npos) << r.out;
}

TEST(TuneCli, BadInputIsOneLineAndNonZero) {
  expect_one_line_error(tune("topology --topology \"pack:2 banana:3\""), "invalid topology");
  expect_one_line_error(tune("topology --topology nosuchmachine"),
                        "unknown topology 'nosuchmachine'");
  expect_one_line_error(tune("configs --model nosuchmodel --topology kunpeng920-4s"),
                        "nosuchmodel");
  expect_one_line_error(tune("configs --topology kunpeng920-4s"), "--model");
  expect_one_line_error(
      tune("configs --model llama-160m --topology kunpeng920-4s --phase prefill --numa-local"),
      "no service configuration");
  expect_one_line_error(tune("configs --model llama-160m --topology kunpeng920-4s --phase middle"),
                        "--phase");
  expect_one_line_error(tune("configs --model llama-160m --topology kunpeng920-4s --top-k 0"),
                        "--top-k");
  expect_one_line_error(tune("frobnicate"), "unknown command");
}

TEST(TuneCli, StrayArgumentsAndHugeTopologiesAreErrors) {
  expect_one_line_error(tune("topology extra"), "unexpected argument 'extra'");
  expect_one_line_error(tune("survey extra"), "unexpected argument 'extra'");
  expect_one_line_error(tune("compare extra"), "unexpected argument 'extra'");
  expect_one_line_error(tune("calibrate extra"), "unexpected argument 'extra'");
  expect_one_line_error(tune("configs --model llama-160m extra"), "unexpected argument 'extra'");
  expect_one_line_error(tune("compare"), "compare needs --model");
  // Refused before hwloc builds 10^13 objects.
  expect_one_line_error(tune("topology --topology \"pack:99999 core:99999 pu:999\""),
                        "more than 65536 PUs");
  sandwich::test::TempDir dir;
  expect_one_line_error(
      tune("configs --model llama-160m --topology kunpeng920-4s --params " + dir.path().string()),
      "is a directory");
}

TEST(TuneCli, NoCommandIsAUsageError) {
  const ToolRun r = tune("");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_EQ(r.out.rfind("sandwich-tune: error: no command given", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("usage: sandwich-tune"), std::string::npos) << r.out;
  EXPECT_EQ(tune("--help").rc, 0);
}

TEST(TuneCli, AsymmetricMachineSaysSo) {
  // Two packages, the second with 3 cores: hwloc XML as lstopo writes it.
  sandwich::test::TempDir dir;
  const std::string xml = (dir / "asym.xml").string();
  const std::string gen =
      "lstopo-no-graphics --input \"pack:2 core:4 pu:1\" --restrict 0x7f --of xml " + xml +
      " >/dev/null 2>&1";
  if (std::system(gen.c_str()) != 0) GTEST_SKIP() << "lstopo is not installed";
  const ToolRun r = tune("topology --topology " + xml);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("asymmetric machine: using its largest symmetric part, 6 of 7 PUs"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sandwich::tuner
