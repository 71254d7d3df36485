// sandwich-tune on a quantized GGUF as a user runs it: `kernels` keys every GEMM by its matrix's
// own block type, and `plan` goes end to end (search, measure, choose, kernels, write) to a plan
// that sandwich-generate runs on that file and refuses for a file of another preset.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "engine/formats/dummy_model.h"
#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/plan.h"
#include "kernels/tuned_schedules.h"
#include "test_data.h"
#include "tiny_quant_gguf.h"
#include "tune_command.h"

namespace sandwich::tuner {
namespace {

using test::CommandResult;
using test::tune;

std::string generate(const std::filesystem::path& model, const std::string& extra) {
  return (test::bin_dir() / "sandwich-generate").string() + " --model " + model.string() +
         " --prompt hi -n 2 --temperature 0 " + extra;
}

// Every entry is of a type the file holds, covers M from 1 on, and installs without a warning.
std::set<std::string> table_types(const std::filesystem::path& file) {
  const engine::ScheduleTable t = engine::read_schedule_table(file);
  std::set<std::string> types;
  for (const engine::TunedGemm& g : t.gemms) {
    types.insert(g.dtype);
    EXPECT_FALSE(g.ranges.empty()) << g.dtype;
    if (!g.ranges.empty()) {
      EXPECT_EQ(g.ranges.front().m_lo, 1) << g.dtype;
    }
  }
  std::ostringstream warn;
  EXPECT_GT(engine::install_schedule_table(file, warn), 0u);
  EXPECT_EQ(warn.str(), "");
  for (const kernels::GemmKey& k : kernels::installed_tuned_schedules()->all_keys())
    EXPECT_TRUE(k.qtype) << k.to_string();
  engine::install_schedule_table(engine::ScheduleTable{}, "none",
                                 warn);  // leave the process as it was
  return types;
}

TEST(QuantTuneCli, KernelsKeysEachGemmOfAQuantizedFileByItsType) {
  test::TempDir dir;
  const auto model = test::write_tiny_quant_gguf(dir.path(), "q4_k_m");
  const auto table = dir / "t.json";
  const CommandResult r =
      tune("kernels --model " + model.string() +
           " --config 1x2 --max-m 4 --min-seconds 0 --no-attention -o " + table.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // q, o and layer 0's down; k and v of layer 0; gate/up; layer 1's v and down; the head.
  EXPECT_NE(r.err.find("tuning 6 GEMM shapes of tiny-quant (q4_k_m: q4_k x 13, f32 x 5, q6_k x 3; "
                       "1x2, CPUs "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("N=320 K=256 q6_k threads=2: "), std::string::npos) << r.out;  // LM head
  EXPECT_EQ(table_types(table), (std::set<std::string>{"q4_k", "q6_k"}));
  // The engine finds an entry for every GEMM the model runs.
  const CommandResult g =
      test::run_command(generate(model, "--threads 2 --schedules " + table.string()));
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.err.find("has no entry"), std::string::npos) << g.err;
}

TEST(QuantTuneCli, APlanOfAQuantizedFileRunsOnItAndIsRefusedForAnotherPreset) {
  test::TempDir dir;
  const auto km = test::write_tiny_quant_gguf(dir.path(), "q4_k_m");
  const auto ks = test::write_tiny_quant_gguf(dir.path(), "q4_k_s");
  const auto file = dir / "p.json";
  const CommandResult r = tune("plan --model " + km.string() +
                               " --budget 8s --top-k 2 --max-m 4 --min-seconds 0 "
                               "--no-attention -o " +
                               file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model      tiny-quant (q4_k_m, "), std::string::npos) << r.out;
  for (const char* s : {"[2/6 measure]", "[3/6 kernels]", "[4/6 remeasure]", "[6/6 write] done"})
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
  const engine::Plan plan = engine::load_plan(file);
  ASSERT_TRUE(plan.model);
  EXPECT_EQ(plan.model->weights_name, "q4_k_m");
  EXPECT_EQ(plan.model->weights.rfind("q4_k x ", 0), 0u) << plan.model->weights;
  // Two ranks would cut the tiny model's 256-value blocks: the search leaves them out.
  EXPECT_EQ(plan.prefill.rank_count(), 1);
  EXPECT_EQ(plan.decode.rank_count(), 1);
  ASSERT_TRUE(plan.schedules);
  EXPECT_EQ(table_types(*plan.schedules), (std::set<std::string>{"q4_k", "q6_k"}));

  const CommandResult g = test::run_command(generate(km, "--plan " + file.string()));
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.err.find("sandwich: schedules:"), std::string::npos) << g.err;
  EXPECT_EQ(g.err.find("warning"), std::string::npos) << g.err;
  test::expect_one_line_error(test::run_command(generate(ks, "--plan " + file.string())),
                              "sandwich-generate: error: " + file.string() +
                                  " was made for another model (the plan was made for q4_k_m (");
}

// The simulator streams a quantized file's own bytes per weight (from its header, nothing
// loaded): its decode is predicted faster than the same model's BF16 file.
TEST(QuantTuneCli, TheSimulatorStreamsTheFilesBytesPerWeight) {
  test::TempDir dir;
  const auto q = test::write_tiny_quant_gguf(dir.path(), "q4_k_m");
  const engine::ModelConfig c = test::tiny_quant_model_config();
  const auto bf16 = dir / "tiny-bf16.gguf";
  engine::write_dummy_gguf(c, engine::WeightDType::BF16, engine::default_dummy_vocab(c), 1, bf16);
  auto decode = [](const std::filesystem::path& model) {
    const CommandResult r = tune("configs --model " + model.string() +
                                 " --topology epyc7h12-2s --phase decode --top-k 1 --json");
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json jq = decode(q), jb = decode(bf16);
  const std::string tq = jq["trace"], tb = jb["trace"];
  EXPECT_NE(tq.find("; weights quantized, 0.6"), std::string::npos) << tq;
  EXPECT_NE(tb.find("; weights 2 bytes each"), std::string::npos) << tb;
  const auto& top_q = jq["phases"]["decode"]["configs"][0]["decode"];
  const auto& top_b = jb["phases"]["decode"]["configs"][0]["decode"];
  EXPECT_LT(top_q["memory_ms"].get<double>(), 0.5 * top_b["memory_ms"].get<double>());
  EXPECT_LT(top_q["ms"].get<double>(), top_b["ms"].get<double>());

  const CommandResult d = tune("plan --model " + q.string() + " --dry-run --top-k 1");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("model      tiny-quant (quantized, 0.6"), std::string::npos) << d.out;
}

// Measured on the file's own blocks, configs and compare leave out 2 ranks, which would cut the
// tiny model's 256-value blocks (measuring them would fail the whole command).
TEST(QuantTuneCli, MeasuredSearchesRunTheFileAndSkipRanksThatCutBlocks) {
  test::TempDir dir;
  const auto q = test::write_tiny_quant_gguf(dir.path(), "q4_k_m");
  const CommandResult c = tune("configs --model " + q.string() +
                               " --evaluator measured --phase decode --trace-samples 2 --json");
  ASSERT_EQ(c.code, 0) << c.err;
  const nlohmann::json j = nlohmann::json::parse(c.out);
  ASSERT_FALSE(j["phases"]["decode"]["configs"].empty()) << c.out;
  for (const auto& r : j["phases"]["decode"]["configs"]) EXPECT_EQ(r["ranks"], 1) << r.dump();
  // Published speeds for the simulator's side: no calibration of this machine under test load.
  const CommandResult m = tune(
      "compare --model " + q.string() + " --phase decode --top-k 3 --trace-samples 2 --params " +
      (test::source_dir() / "configs/topologies/xeon-gold-6230-2s.json").string());
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("weights quantized, "), std::string::npos) << m.out;
  EXPECT_EQ(m.out.find("2 x 1"), std::string::npos) << m.out;
}

}  // namespace
}  // namespace sandwich::tuner
