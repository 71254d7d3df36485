// sandwich-tune plan as a user runs it: a miniature of the whole pipeline on stories260K, the
// simulator-only dry run on shipped machines, Ctrl-C and --resume, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/plan.h"
#include "test_data.h"
#include "tune_command.h"

namespace sandwich::tuner {
namespace {

using test::CommandResult;

using test::expect_tune_error;
using test::tune;

std::string stories() {
  return (test::data_dir() / "models/stories260K/stories260K.bin").string();
}

// The plan names two configurations, its figures and a kernel table that covers every GEMM of
// both from M = 1 and installs without a warning.
void expect_complete_plan(const std::filesystem::path& file) {
  const engine::Plan plan = engine::load_plan(file);
  EXPECT_EQ(plan.version, engine::kPlanVersion);
  ASSERT_TRUE(plan.model);
  EXPECT_EQ(plan.model->name, "stories260K");
  EXPECT_EQ(plan.model->dtype, "f32");
  ASSERT_TRUE(plan.machine);
  EXPECT_TRUE(engine::this_machine_fingerprint().mismatch(*plan.machine).empty());
  EXPECT_GE(plan.prefill.rank_count(), 1);
  EXPECT_GE(plan.decode.rank_count(), 1);
  EXPECT_GT(plan.prefill_figures.measured_ms, 0);
  EXPECT_GT(plan.prefill_figures.simulated_ms, 0);
  EXPECT_GT(plan.decode_figures.measured_ms, 0);
  EXPECT_NE(plan.objective.find("goodput"), std::string::npos) << plan.objective;
  EXPECT_NE(plan.command.find("sandwich-tune plan"), std::string::npos) << plan.command;
  const auto details = nlohmann::json::parse(plan.details_json);
  EXPECT_GE(details["candidates"]["prefill"].size(), 1u);
  EXPECT_TRUE(details["stage_seconds"].contains("kernels")) << details.dump();
  EXPECT_TRUE(details["stage_seconds"].contains("remeasure")) << details.dump();
  // Both choices, and what the kernels stage made of every measured candidate.
  EXPECT_TRUE(details["choice_changed"].is_boolean()) << details.dump();
  EXPECT_TRUE(details["cost_model_choice"].contains("prefill")) << details.dump();
  EXPECT_GE(details["kernels"]["keys_asked"].get<int>(),
            details["kernels"]["keys_distinct"].get<int>());
  for (const auto& c : details["candidates"]["prefill"]) {
    if (c.contains("measured_ms")) {
      EXPECT_TRUE(c.contains("kernels")) << c.dump();
    }
  }
  EXPECT_EQ(details["slo"]["name"], "batched-1.3b");
  ASSERT_TRUE(plan.schedules);
  EXPECT_EQ(plan.schedules->filename(), file.stem().string() + ".schedules.json");
  const engine::ScheduleTable t = engine::read_schedule_table(*plan.schedules);
  EXPECT_TRUE(t.resume_json.empty());
  ASSERT_FALSE(t.gemms.empty());
  for (const engine::TunedGemm& g : t.gemms) {
    int64_t next = 1;
    for (const engine::TunedGemmRange& r : g.ranges) {
      EXPECT_EQ(r.m_lo, next);
      next = r.m_hi + 1;
    }
    EXPECT_GE(next, 65);  // the decode batch limit at least
  }
  std::ostringstream warnings;
  EXPECT_GT(engine::install_schedule_table(*plan.schedules, warnings), 0u);
  EXPECT_EQ(warnings.str(), "");
  engine::install_schedule_table(engine::ScheduleTable{}, "none",
                                 warnings);  // leave the process as it was
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".state"));
}

TEST(PlanCli, AMiniaturePipelineWritesAPlanThatLoads) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const auto file = dir / "p.json";
  const CommandResult r =
      tune("plan --model " + stories() + " --budget 8s --top-k 2 --max-m 4 --min-seconds 0 -o " +
           file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"prefill ", "decode ", "goodput ", "objective ", "choice ", "tuning ",
                        "kernels ", "stages ", "budget ", "sandwichd --model"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  for (const char* s : {"[1/6 search]", "[2/6 measure]", "[3/6 kernels]", "[4/6 remeasure]",
                        "[5/6 choose]", "[6/6 write] done"})
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
  expect_complete_plan(file);
}

TEST(PlanCli, ResumesAfterAnInterrupt) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  const auto file = dir / "p.json";
  const std::string args = "plan --model " + stories() +
                           " --top-k 2 --max-m 64 --min-seconds 0.001 --no-attention -o " +
                           file.string();
  // Four seconds: into the kernels stage, past its first GEMM (about 1 s before it starts).
  const CommandResult cut =
      test::run_command("timeout --preserve-status -s INT 4 " +
                        (test::bin_dir() / "sandwich-tune").string() + " " + args);
  if (cut.code == 0) GTEST_SKIP() << "the plan was made before the interrupt: " << cut.err;
  ASSERT_EQ(cut.code, 130) << cut.err;
  EXPECT_NE(cut.err.find("--resume"), std::string::npos) << cut.err;
  ASSERT_TRUE(std::filesystem::exists(file.string() + ".state"));
  // The schedules tuned before the interrupt, if it came in the kernels stage.
  const auto table_file = dir / "p.schedules.json";
  std::vector<engine::TunedGemm> before;
  if (std::filesystem::exists(table_file)) before = engine::read_schedule_table(table_file).gemms;
  expect_tune_error(tune(args + " --top-k 3 --resume"), "other options");
  // The finished stages are not run again; a budget (which may change) ends the kernel tuning.
  const CommandResult resumed = tune(args + " --resume --budget 8s");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.err.find("[1/6 search]"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("[3/6 kernels]"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("[4/6 remeasure]"), std::string::npos) << resumed.err;
  expect_complete_plan(file);
  // What was tuned before is kept as it was (its measured GFLOPS too), not tuned again.
  const engine::ScheduleTable after = engine::read_schedule_table(table_file);
  for (const engine::TunedGemm& g : before) {
    const auto same_key = [&](const engine::TunedGemm& x) {
      return x.n == g.n && x.k == g.k && x.dtype == g.dtype && x.threads == g.threads &&
             x.pair == g.pair;
    };
    const auto it = std::find_if(after.gemms.begin(), after.gemms.end(), same_key);
    ASSERT_NE(it, after.gemms.end()) << g.n << "x" << g.k;
    for (const engine::TunedGemmRange& r : g.ranges) {
      const auto kept = std::find_if(it->ranges.begin(), it->ranges.end(), [&](const auto& x) {
        return x.m_lo == r.m_lo && x.m_hi >= r.m_hi && x.schedule == r.schedule &&
               x.gflops == r.gflops;
      });
      EXPECT_NE(kept, it->ranges.end()) << g.n << "x" << g.k << " M " << r.m_lo << ".." << r.m_hi;
    }
  }
  expect_tune_error(tune(args + " --resume"), "does not exist");
}

TEST(PlanCli, DryRunOnShippedTopologiesPrintsTheCandidates) {
  for (const char* machine : {"kunpeng920-4s", "epyc7h12-2s", "xeon-gold-6230-2s"}) {
    const CommandResult r =
        tune(std::string("plan --model llama3-8b --top-k 3 --dry-run --topology ") + machine);
    ASSERT_EQ(r.code, 0) << machine << ": " << r.err;
    EXPECT_NE(r.out.find("topology   " + std::string(machine)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("prefill (simulated mean ms per request"), std::string::npos) << r.out;
    // llama3-8b's own SLO preset is single-sequence: decode is measured at batch 1.
    EXPECT_NE(r.out.find("decode (simulated ms per step at batch 1 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  3  "), std::string::npos) << r.out;  // three of each
    EXPECT_EQ(r.out.find("  4  "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("by the simulator alone: prefill "), std::string::npos) << r.out;
  }
}

// Kunpeng 920's latent 4-core clusters: a single-sequence SLO decodes one sequence, where the
// step is memory-bound and spreading each rank over every other core beats packing whole
// clusters; found by default, without --placement-hash. At batch 16 the FP32-rate cores make
// decode compute-bound there, so all cores win.
TEST(PlanCli, KunpengSingleSequenceDecodeSpreadsOverTheLatentClusters) {
  const CommandResult r = tune(
      "plan --model llama-1.3b --load-format dummy --topology kunpeng920-4s --dry-run "
      "--slo single-1.3b --top-k 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("decode (simulated ms per step at batch 1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode 8x12 [0,2,4,6,8,10,12,14,16,18,20,22] [24,26,"), std::string::npos)
      << r.out;
  const CommandResult batched = tune(
      "plan --model llama-1.3b --load-format dummy --topology kunpeng920-4s --dry-run "
      "--slo single-1.3b --decode-batch 16 --top-k 2");
  ASSERT_EQ(batched.code, 0) << batched.err;
  EXPECT_NE(batched.out.find("at batch 16 / at batch 1"), std::string::npos) << batched.out;
  expect_tune_error(tune("plan --model llama-1.3b --topology kunpeng920-4s --dry-run "
                         "--decode-batch 0"),
                    "--decode-batch");
}

TEST(PlanCli, BadInputIsOneLine) {
  test::TempDir dir;
  const std::string o = " -o " + (dir / "p.json").string();
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --budget soon" + o),
                    "--budget");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --budget 0s" + o),
                    "--budget");
  expect_tune_error(
      tune("plan --model llama-1.3b --load-format dummy --topology kunpeng920-4s" + o),
      "add --dry-run");
  expect_tune_error(tune("plan --model llama-1.3b --topology kunpeng920-4s --dry-run" + o),
                    "drop -o");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --slo nosuchslo" + o),
                    "unknown SLO preset 'nosuchslo'");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --slo-scale 0" + o),
                    "--slo-scale");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --trace nosuchtrace" + o),
                    "unknown trace 'nosuchtrace'");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy"), "-o FILE");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --top-k 0" + o), "--top-k");
  expect_tune_error(tune("plan --model llama-1.3b --load-format dummy --resume" + o),
                    "does not exist");
  expect_tune_error(tune("plan" + o), "--model");
  EXPECT_FALSE(std::filesystem::exists(dir / "p.json"));
}

TEST(PlanCli, ConfigsWritesASimulatorOnlyPlan) {
  test::TempDir dir;
  const auto file = dir / "c.json";
  const CommandResult r = tune("configs --model llama-1.3b --top-k 2 --plan-out " + file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + file.string()), std::string::npos) << r.out;
  const engine::Plan plan = engine::load_plan(file);
  EXPECT_EQ(plan.version, engine::kPlanVersion);
  ASSERT_TRUE(plan.model);
  EXPECT_EQ(plan.model->name, "llama-1.3b");
  EXPECT_GT(plan.prefill_figures.simulated_ms, 0);
  EXPECT_LT(plan.prefill_figures.measured_ms, 0);
  EXPECT_GT(plan.decode_figures.simulated_ms, 0);
  EXPECT_FALSE(plan.schedules);
  EXPECT_FALSE(plan.inline_schedules);
  expect_tune_error(tune("configs --model llama-1.3b --phase decode --plan-out " + file.string()),
                    "both phases");
  expect_tune_error(
      tune("configs --model llama-1.3b --topology kunpeng920-4s --plan-out " + file.string()),
      "drop --topology");
}

}  // namespace
}  // namespace sandwich::tuner
