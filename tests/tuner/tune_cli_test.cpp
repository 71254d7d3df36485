// sandwich-tune as a user runs it: output, JSON, errors on one line with a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "common/json_file.h"
#include "kernels/schedule.h"
#include "test_data.h"
#include "topotree/service_config.h"
#include "tune_command.h"

namespace sandwich::tuner {
namespace {

using test::CommandResult;

using test::expect_tune_error;
using test::tune;

TEST(TuneCli, TopologyTextAndDot) {
  test::TempDir dir;
  const CommandResult r =
      tune("topology --topology kunpeng920-4s --dot " + (dir / "t.dot").string());
  ASSERT_EQ(r.code, 0) << r.err;
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
  const CommandResult r =
      tune("configs --model llama-160m --phase decode --top-k 3 --json --params " +
           (test::source_dir() / "configs/topologies/xeon-gold-6230-2s.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& configs = j["phases"]["decode"]["configs"];
  ASSERT_GE(configs.size(), 1u);
  for (const auto& c : configs) {
    EXPECT_NO_THROW(topotree::service_config_from_json(c["config"])) << c.dump();
    EXPECT_GT(c["predicted_ms"].get<double>(), 0);
  }
  EXPECT_GE(j["phases"]["decode"]["stats"]["configs_evaluated"].get<int>(), 1);
  EXPECT_FALSE(j["phases"].contains("prefill"));
}

TEST(TuneCli, ConfigsTextShowsRankingAndStatistics) {
  const CommandResult r =
      tune("configs --model llama3-8b --topology kunpeng920-4s --top-k 3 --trace-samples 16");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("prefill: top 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode: top 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trees explored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned"), std::string::npos) << r.out;
}

// The Kunpeng's published figures plus a latent group of 4-core clusters: the report says which
// cores contend and how full each configuration's busiest group is; without it, nothing.
TEST(TuneCli, ConfigsTextShowsTheLatentGroupTerm) {
  test::TempDir dir;
  nlohmann::json params =
      read_json_file(test::source_dir() / "configs/topologies/kunpeng920-4s.json",
                     file_kinds::kMachineDescription)["params"];
  params["latent_group"] = {{"cores", 4}, {"stride", 1}, {"bw_gbs", 20}};
  std::ofstream(dir / "p.json") << params.dump();
  const std::string args =
      "configs --model llama3-8b --topology kunpeng920-4s --phase decode --top-k 1 "
      "--trace-samples 8";
  const CommandResult r = tune(args + " --params " + (dir / "p.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("contention latent groups of 4 cores (stride 1), 20.0 GB/s each under "
                       "each Die+L3 (48 groups)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(busiest latent group: 2 of 4 cores)"), std::string::npos) << r.out;
  // With a latent group the search also runs the placement hash, and says so, or says that it
  // passed its time bound (a sanitizer build can take over 10 s here); --placement-hash then
  // notes that the default already does.
  EXPECT_TRUE(r.out.find("decode search: placement hash for the latent groups of 4 cores") !=
                  std::string::npos ||
              r.out.find("decode search: the placement hash (latent groups of 4 cores (stride 1), "
                         "20.0 GB/s each) passed its bound") != std::string::npos)
      << r.out;
  const CommandResult asked =
      tune(args + " --placement-hash --params " + (dir / "p.json").string());
  ASSERT_EQ(asked.code, 0) << asked.err;
  EXPECT_NE(asked.out.find("has the search use the placement hash by default"), std::string::npos)
      << asked.out;
  nlohmann::json none = params;
  none.erase("latent_group");
  std::ofstream(dir / "none.json") << none.dump();
  const CommandResult neutral = tune(args + " --params " + (dir / "none.json").string());
  ASSERT_EQ(neutral.code, 0) << neutral.err;
  EXPECT_EQ(neutral.out.find("latent"), std::string::npos) << neutral.out;
  EXPECT_EQ(neutral.out.find("placement hash"), std::string::npos) << neutral.out;
  params["latent_group"]["cores"] = 5;
  std::ofstream(dir / "p.json") << params.dump();
  expect_tune_error(tune(args + " --params " + (dir / "p.json").string()),
                    "does not fit the 24 cores under each Die+L3");
}

TEST(TuneCli, BadInputIsOneLineAndNonZero) {
  expect_tune_error(tune("topology --topology \"pack:2 banana:3\""), "invalid topology");
  expect_tune_error(tune("topology --topology nosuchmachine"), "unknown topology 'nosuchmachine'");
  expect_tune_error(tune("configs --model nosuchmodel --topology kunpeng920-4s"), "nosuchmodel");
  expect_tune_error(tune("configs --topology kunpeng920-4s"), "--model");
  expect_tune_error(
      tune("configs --model llama-160m --topology kunpeng920-4s --phase prefill --numa-local"),
      "no service configuration");
  expect_tune_error(tune("configs --model llama-160m --topology kunpeng920-4s --phase middle"),
                    "--phase");
  expect_tune_error(tune("configs --model llama-160m --topology kunpeng920-4s --top-k 0"),
                    "--top-k");
  expect_tune_error(tune("frobnicate"), "unknown command");
}

TEST(TuneCli, StrayArgumentsAndHugeTopologiesAreErrors) {
  expect_tune_error(tune("topology extra"), "unexpected argument 'extra'");
  expect_tune_error(tune("survey extra"), "unexpected argument 'extra'");
  expect_tune_error(tune("compare extra"), "unexpected argument 'extra'");
  expect_tune_error(tune("calibrate extra"), "unexpected argument 'extra'");
  expect_tune_error(tune("configs --model llama-160m extra"), "unexpected argument 'extra'");
  expect_tune_error(tune("compare"), "compare needs --model");
  // Refused before hwloc builds 10^13 objects.
  expect_tune_error(tune("topology --topology \"pack:99999 core:99999 pu:999\""),
                    "more than 65536 PUs");
  test::TempDir dir;
  expect_tune_error(
      tune("configs --model llama-160m --topology kunpeng920-4s --params " + dir.path().string()),
      "machine parameters file " + dir.path().string() + ": a directory, not a file");
}

TEST(TuneCli, NoCommandIsAUsageError) {
  const CommandResult r = tune("");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("sandwich-tune: error: no command given", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("usage: sandwich-tune"), std::string::npos) << r.err;
  EXPECT_EQ(tune("--help").code, 0);
}

TEST(TuneCli, AsymmetricMachineSaysSo) {
  // Two packages, the second with 3 cores: hwloc XML as lstopo writes it.
  test::TempDir dir;
  const std::string xml = (dir / "asym.xml").string();
  const std::string gen =
      "lstopo-no-graphics --input \"pack:2 core:4 pu:1\" --restrict 0x7f --of xml " + xml +
      " >/dev/null 2>&1";
  if (std::system(gen.c_str()) != 0) GTEST_SKIP() << "lstopo is not installed";
  const CommandResult r = tune("topology --topology " + xml);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("asymmetric machine: using its largest symmetric part, 6 of 7 PUs"),
            std::string::npos)
      << r.out;
}

// Every GEMM of the table covers M = 1..max_m in contiguous ranges.
void expect_covering_table(const std::filesystem::path& file, int64_t max_m, size_t gemms) {
  std::ifstream in(file);
  const auto t = nlohmann::json::parse(in);
  EXPECT_EQ(t["format"], "sandwich-schedules");
  ASSERT_EQ(t["gemms"].size(), gemms) << t.dump();
  for (const auto& g : t["gemms"]) {
    int64_t next = 1;
    for (const auto& r : g["ranges"]) {
      EXPECT_EQ(r["m"][0].get<int64_t>(), next) << g.dump();
      next = r["m"][1].get<int64_t>() + 1;
      EXPECT_NO_THROW(kernels::parse_schedule(r["schedule"].get<std::string>()));
    }
    EXPECT_EQ(next, max_m + 1) << g.dump();
  }
}

TEST(TuneCli, KernelsWritesATableAndResumesAfterAnInterrupt) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const auto model = test::data_dir() / "models/stories260K";
  const std::string args = "kernels --model " + (model / "stories260K.bin").string() +
                           " --tokenizer " + (model / "tok512.bin").string() +
                           " --config 1x2 --min-seconds 0 -o " + (dir / "t.json").string();
  const CommandResult whole = tune(args + " --max-m 4");
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_NE(whole.out.find("schedules profiled"), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find("tuned vs cost model"), std::string::npos) << whole.out;
  EXPECT_NE(whole.err.find("[5/5]"), std::string::npos) << whole.err;
  expect_covering_table(dir / "t.json", 4, 5);  // q, k/v, o, gate/up, down; the head is 512

  // Ctrl-C a longer run: it writes what it has and says how to continue.
  const CommandResult cut = test::run_command("timeout --preserve-status -s INT 1 " +
                                              (test::bin_dir() / "sandwich-tune").string() + " " +
                                              args + " --max-m 200 --min-seconds 0.001");
  if (cut.code == 0) GTEST_SKIP() << "the tuning finished before the interrupt: " << cut.err;
  ASSERT_EQ(cut.code, 130) << cut.err;
  EXPECT_NE(cut.err.find("--resume"), std::string::npos) << cut.err;
  {
    std::ifstream in(dir / "t.json");
    EXPECT_TRUE(nlohmann::json::parse(in).contains("resume"));
  }
  // Other options than the interrupted run's are refused.
  expect_tune_error(tune(args + " --max-m 201 --min-seconds 0.001 --resume"), "--max-m");
  const CommandResult resumed = tune(args + " --max-m 200 --min-seconds 0.001 --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  expect_covering_table(dir / "t.json", 200, 5);
  std::ifstream in(dir / "t.json");
  EXPECT_FALSE(nlohmann::json::parse(in).contains("resume"));
  expect_tune_error(tune(args + " --max-m 200 --resume"), "nothing to resume");
}

TEST(TuneCli, KernelsBadInputIsOneLine) {
  expect_tune_error(tune("kernels --model llama-1.3b --load-format dummy"), "-o FILE");
  expect_tune_error(tune("kernels -o /tmp/x.json"), "--model");
  expect_tune_error(tune("kernels --model llama-1.3b --load-format dummy --max-m 0 -o /tmp/x.json"),
                    "--max-m");
  expect_tune_error(
      tune("kernels --model llama-1.3b --load-format dummy --resume -o /nonexistent/t.json"),
      "does not exist");
}

}  // namespace
}  // namespace sandwich::tuner
