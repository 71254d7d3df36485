// `sandwich-bench engine` (run_engine_bench in sandwich-bench) as a user runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "covering_schedule_table.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

// It checks its whole command line before it loads the model (here a file that does not
// exist, so a check that came later would report that instead).
TEST(BenchEngineCli, BadInputFailsBeforeTheModelLoads) {
  const std::string bin =
      (test::bin_dir() / "sandwich-bench").string() + " engine --model /nonexistent/m.gguf ";
  auto error_of = [&](const std::string& args) {
    const test::CommandResult r = test::run_command(bin + args);
    EXPECT_EQ(r.code, 1) << args;
    test::expect_one_line_error(r, "sandwich-bench engine: error: ");
    return r.err;
  };
  EXPECT_NE(error_of("bogus").find("unexpected argument 'bogus'"), std::string::npos);
  EXPECT_NE(error_of("--configs ''").find("--configs needs at least one configuration"),
            std::string::npos);
  EXPECT_NE(error_of("--configs 1x1,,1x1").find("empty item"), std::string::npos);
  EXPECT_NE(error_of("--configs 99999999999x1").find("99999999999"), std::string::npos);
  EXPECT_NE(error_of("--configs 1x1 --decode-config 1x1").find("not both"), std::string::npos);
  EXPECT_NE(error_of("--prefill-config 99x1").find("99 ranks is more than"), std::string::npos);
  EXPECT_NE(error_of("--prompt-tokens 0 --gen-tokens 0").find("nothing to do"), std::string::npos);
  EXPECT_NE(error_of("-p 0 -n 0").find("nothing to do"), std::string::npos);  // llama-bench's names
  EXPECT_NE(error_of("-t -3").find("--threads must be 0 (all cores) to"), std::string::npos);
  EXPECT_NE(error_of("-t 100000").find("got 100000"), std::string::npos);
  EXPECT_NE(error_of("--kv-cache-dtype half")
                .find("--kv-cache-dtype must be auto, bfloat16, bf16, float32, f32 or fp32, got "
                      "'half'"),
            std::string::npos);
  EXPECT_NE(error_of("--depth -1").find("--depth"), std::string::npos);
  EXPECT_NE(error_of("--decode-batch 1,0").find("--decode-batch takes batch sizes from 1 to 1024"),
            std::string::npos);
  EXPECT_NE(error_of("--decode-batch 4x").find("got '4x'"), std::string::npos);
  EXPECT_NE(error_of("--decode-batch 1,,4 --counters").find("got '1,,4'"), std::string::npos);
  EXPECT_NE(
      error_of("--allreduce ring").find("--allreduce must be rank-shifted or naive, got 'ring'"),
      std::string::npos);
  EXPECT_NE(
      error_of("--json /nonexistent/x.json").find("cannot write --json file /nonexistent/x.json"),
      std::string::npos);
  EXPECT_NE(error_of("").find("/nonexistent/m.gguf"), std::string::npos);  // and then the model
}

// Decode at a depth, over either KV cache: the JSON names the cache's type and its bytes per
// token (BF16's exactly half of F32's) and the test's depth, as llama-bench names it.
TEST(BenchEngineCli, DecodeAtADepthOverEitherKVCache) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const std::string stories = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  const std::string bench = (test::bin_dir() / "sandwich-bench").string() + " engine --model " +
                            stories + " -t 1 -p 0 -n 4 --depth 40 -r 1 --warmup 1 --json " +
                            (dir / "r.json").string();
  auto run = [&](const std::string& extra) {
    const test::CommandResult r = test::run_command(bench + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("| tg4 @ d40 |"), std::string::npos) << r.out;
    std::ifstream in(dir / "r.json");
    return std::pair{nlohmann::json::parse(in), r.err};
  };
  const auto [bf16, bf16_log] = run("");
  const auto [f32, f32_log] = run(" --kv-cache-dtype float32");
  EXPECT_EQ(bf16["kv_cache"]["dtype"], "bf16");
  EXPECT_EQ(f32["kv_cache"]["dtype"], "f32");
  EXPECT_EQ(f32["kv_cache"]["bytes_per_token"].get<int64_t>(),
            2 * bf16["kv_cache"]["bytes_per_token"].get<int64_t>());
  EXPECT_EQ(bf16["results"][0]["depth"], 40);
  EXPECT_EQ(bf16["results"][0]["test"], "tg4 @ d40");
  EXPECT_NE(bf16_log.find("kv cache bf16, "), std::string::npos) << bf16_log;
  EXPECT_NE(f32_log.find("kv cache f32, "), std::string::npos) << f32_log;
}

// --stream: the bytes a decode step reads (weights once, the KV cache over the positions) and the
// DRAM stream measured between the repetitions; without it the results carry no "reads".
TEST(BenchEngineCli, StreamReportsTheDecodeReadsAsAFractionOfTheStream) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const std::string stories = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  const test::CommandResult r = test::run_command(
      (test::bin_dir() / "sandwich-bench").string() + " engine --model " + stories +
      " -t 1 -p 0 -n 4 --depth 10 -r 2 --warmup 0 --stream --kv-cache-dtype f32 --decode-batch "
      "1,2 --json " +
      (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tg4 @ d10: a step reads "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of the DRAM stream ("), std::string::npos) << r.out;
  std::ifstream in(dir / "r.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  const nlohmann::json& reads = j["results"][0]["reads"];
  // stories260K in F32: 5 layers of 45,312 matrix weights and the tied 512 x 64 head.
  const double matrices = (5 * 45312 + 512 * 64) * 4.0;
  const double weights = reads["weight_bytes_per_token"].get<double>();
  EXPECT_GE(weights, matrices);
  EXPECT_LE(weights, matrices * 1.25);  // panel padding, norms and one embedding row
  // 5 layers x 4 KV heads x 8 x (K and V) x 4 bytes per position, over positions 10..13.
  EXPECT_DOUBLE_EQ(reads["kv_bytes_per_token"].get<double>(), 5 * 4 * 8 * 2 * 4 * 12.5);
  EXPECT_EQ(reads["stream_samples"].size(), 2u);
  const double stream = reads["stream_gb_per_s"].get<double>();
  EXPECT_GT(stream, 0);
  EXPECT_NEAR(reads["fraction_of_stream"].get<double>(), reads["gb_per_s"].get<double>() / stream,
              1e-9);
  const double tps = j["results"][0]["tokens_per_second"]["median"].get<double>();
  EXPECT_NEAR(reads["gb_per_s"].get<double>(), reads["bytes_per_token"].get<double>() * tps / 1e9,
              1e-6 * reads["gb_per_s"].get<double>());
  // Two sequences a step: the weights once, each one's KV cache; per token, half the step.
  const nlohmann::json& two = j["results"][1]["reads"];
  EXPECT_EQ(j["results"][1]["test"], "tg4 b2 @ d10");
  EXPECT_DOUBLE_EQ(two["bytes_per_step"].get<double>(),
                   weights + 2 * reads["kv_bytes_per_token"].get<double>());
  EXPECT_DOUBLE_EQ(two["bytes_per_token"].get<double>(), two["bytes_per_step"].get<double>() / 2);
  const double tps2 = j["results"][1]["tokens_per_second"]["median"].get<double>();
  EXPECT_NEAR(two["gb_per_s"].get<double>(), two["bytes_per_token"].get<double>() * tps2 / 1e9,
              1e-6 * two["gb_per_s"].get<double>());
}

// --counters: prefill and decode at batch 1, 4 and 16, each with its counters' row; on a machine
// without a PMU (a VM) or where perf_event_paranoid forbids them, a line per counter says why and
// the run succeeds with its normal results.
TEST(BenchEngineCli, CountersAreReportedOrSaidUnavailableNeverFatal) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const std::string stories = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  const test::CommandResult r = test::run_command(
      (test::bin_dir() / "sandwich-bench").string() + " engine --model " + stories +
      " -t 1 -p 16 -n 4 -r 1 --warmup 0 --counters --json " + (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* test : {"| pp16 |", "| tg4 |", "| tg4 b4 |", "| tg4 b16 |"})
    EXPECT_NE(r.out.find(test), std::string::npos) << test << "\n" << r.out;
  EXPECT_NE(r.out.find("| config | test | IPC | LLC MPKI | bus PKI | counted |"), std::string::npos)
      << r.out;
  std::ifstream in(dir / "r.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][3]["batch"], 16);
  for (const auto& result : j["results"]) {
    ASSERT_TRUE(result.contains("counters")) << result.dump();
    EXPECT_TRUE(result["counters"]["events"].is_object());
  }
  const nlohmann::json& unavailable = j["counters"]["unavailable"];
  ASSERT_TRUE(unavailable.is_array());
  for (const auto& line : unavailable) {
    const std::string text = line.get<std::string>();
    EXPECT_NE(r.out.find("counter " + text + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find(" unavailable: "), std::string::npos) << text;
  }
  const bool ipc = !j["results"][0]["counters"]["ipc"].is_null();
  const bool cycles_unavailable = r.out.find("counter cycles unavailable: ") != std::string::npos;
  EXPECT_NE(ipc, cycles_unavailable) << r.out;  // one or the other
  if (!std::filesystem::exists("/sys/bus/event_source/devices/cpu")) {
    EXPECT_NE(r.out.find("counter cycles unavailable: no hardware PMU here"), std::string::npos)
        << r.out;
  }
}

// The JSON says which table ran and how many ranges it installed; none: null and 0.
TEST(BenchEngineCli, JsonSaysWhetherATunedScheduleTableWasUsed) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const std::string stories = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  const std::string bench = (test::bin_dir() / "sandwich-bench").string() + " engine --model " +
                            stories + " -t 2 --prompt-tokens 8 --gen-tokens 4 -r 1 --warmup 0";
  const int keys = test::write_covering_schedule_table(bench, dir / "t.json");
  ASSERT_GT(keys, 0);
  const auto run = [&](const std::string& extra) {
    const test::CommandResult r =
        test::run_command(bench + " --json " + (dir / "r.json").string() + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("sandwich: schedules:"), std::string::npos) << r.err;
    std::ifstream in(dir / "r.json");
    return nlohmann::json::parse(in);
  };
  nlohmann::json j = run(" --schedules " + (dir / "t.json").string());
  EXPECT_EQ(j["schedules"], (dir / "t.json").string());
  EXPECT_EQ(j["schedule_ranges"], 3 * keys);
  j = run("");
  EXPECT_TRUE(j["schedules"].is_null());
  EXPECT_EQ(j["schedule_ranges"], 0);
}

// The ablation switches are recorded in the JSON (defaults included, so that a report can tell
// every run apart), and --same-config runs each --configs pair's prefill side for decode too.
TEST(BenchEngineCli, JsonRecordsTheAblationSwitches) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const std::string stories = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  const std::string json = (dir / "r.json").string();
  const std::string bench = (test::bin_dir() / "sandwich-bench").string() + " engine --model " +
                            stories + " --prompt-tokens 8 --gen-tokens 4 -r 1 --warmup 0 --json " +
                            json + " --configs 2x1/1x2";
  const auto run = [&](const std::string& extra) {
    const test::CommandResult r = test::run_command(bench + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    std::ifstream in(json);
    return std::pair{nlohmann::json::parse(in), r.err};
  };
  auto [j, err] = run("");
  EXPECT_EQ(j["allreduce"], "rank-shifted");
  EXPECT_EQ(j["no_split_k"], false);
  EXPECT_EQ(j["same_config"], false);
  EXPECT_EQ(j["results"][1]["config"]["ranks"].size(), 1u) << j.dump();  // decode: 1x2
  EXPECT_NE(err.find("; all-reduce rank-shifted, split-k, a configuration per phase\n"),
            std::string::npos)
      << err;
  std::tie(j, err) = run(" --allreduce naive --no-split-k --same-config");
  EXPECT_EQ(j["allreduce"], "naive");
  EXPECT_EQ(j["no_split_k"], true);
  EXPECT_EQ(j["same_config"], true);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["test"], "tg4");
  EXPECT_EQ(j["results"][1]["config"]["ranks"].size(), 2u) << j.dump();  // decode: 2x1 too
  EXPECT_NE(err.find("configs 2x1/1x2 (--same-config: decode runs each prefill configuration)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("; all-reduce naive, no split-k, one configuration for both phases\n"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace sandwich::engine
