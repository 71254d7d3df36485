// run_engine_bench in-process, as `sandwich-bench engine` calls it.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "engine/runtime/engine_bench.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

TEST(EngineBench, RefusesBadOptionsBeforeTheModelLoads) {
  EngineBenchOptions o;
  o.load.model = "/nonexistent/m.gguf";
  o.reps = 0;
  try {
    run_engine_bench(o);
    FAIL() << "no error";
  } catch (const CliError& e) {
    EXPECT_STREQ(e.what(), "--reps must be at least 1");
  }
}

// A prefill and a decode test under each configuration compared, in the order given.
TEST(EngineBench, RunsEachTestUnderEachConfiguration) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  EngineBenchOptions o;
  o.load.model = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  o.prompt_tokens = 8;
  o.gen_tokens = 4;
  o.reps = 2;
  o.warmup = 0;
  o.configs_text = "1x1,1x1/1x1";
  o.json_path = (dir / "r.json").string();
  run_engine_bench(o);
  std::ifstream in(dir / "r.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 4u);
  const char* tests[] = {"pp8", "tg4", "pp8", "tg4"};
  const char* configs[] = {"1x1", "1x1", "1x1/1x1", "1x1/1x1"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(j["results"][i]["test"], tests[i]);
    EXPECT_EQ(j["results"][i]["configs"], configs[i]);
    EXPECT_EQ(j["results"][i]["samples"].size(), 2u);
    EXPECT_FALSE(j["results"][i].contains("reads"));
  }
}

// Decode of several sequences together: a test each, tokens/s of the whole batch, under one rank
// and two (rank processes), and the counters' readings with every test where asked.
TEST(EngineBench, DecodesBatchesUnderEachConfigurationWithCounters) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  EngineBenchOptions o;
  o.load.model = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  o.prompt_tokens = 0;
  o.gen_tokens = 3;
  o.depth = 5;
  o.reps = 1;
  o.warmup = 0;
  o.configs_text = "1x1,2x1";
  o.decode_batches_text = "2,3";
  o.counters = true;
  o.json_path = (dir / "r.json").string();
  run_engine_bench(o);
  std::ifstream in(dir / "r.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][0]["test"], "tg3 b2 @ d5");
  EXPECT_EQ(j["results"][1]["test"], "tg3 b3 @ d5");
  EXPECT_EQ(j["results"][3]["configs"], "2x1");
  for (const auto& r : j["results"]) {
    EXPECT_GT(r["tokens_per_second"]["median"].get<double>(), 0);
    EXPECT_TRUE(r["counters"].contains("ipc"));
    EXPECT_GT(r["counters"]["seconds"].get<double>(), 0);
  }
  EXPECT_TRUE(j["counters"]["bus_source"].is_string());
}

}  // namespace
}  // namespace sandwich::engine
