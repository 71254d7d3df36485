// Plan files as sandwich-generate and sandwich-bench engine run them: exactly what a plan says
// (its configurations and its kernel table, in a file beside it or inline), and one line and a
// non-zero exit for a plan that is missing, broken, edited, or made for another model or
// machine; --plan-mismatch warn runs what still fits.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "command.h"
#include "covering_schedule_table.h"
#include "engine/formats/model_config.h"
#include "plan_files.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using nlohmann::json;
using test::CommandResult;
using test::expect_one_line_error;
namespace fs = std::filesystem;

std::string generate() {
  return (test::bin_dir() / "sandwich-generate").string() + " --model " + test::stories_weights() +
         " --tokenizer " + (test::data_dir() / "models/stories260K/tok512.bin").string() +
         " -n 24 --temperature 0 --prompt 'Once upon a time'";
}

// The text without a plan: what every plan that runs must print.
const std::string& plain_text() {
  static const std::string text = [] {
    const CommandResult r = test::run_command(generate() + " -q");
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  }();
  return text;
}

// The plan as JSON, edited, written back.
void edit(const fs::path& file, const std::function<void(json&)>& change) {
  json j = json::parse(test::slurp(file));
  change(j);
  std::ofstream(file) << j.dump(2);
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `p` as `name` and runs sandwich-generate with it.
  CommandResult run(const Plan& p, const std::string& name, const std::string& extra = "") {
    write_plan(p, dir_ / name);
    return test::run_command(generate() + " --plan " + path(name) + extra);
  }
  test::TempDir dir_;
};

TEST_F(PlanCli, AGoodPlanRunsItsConfigurationsAndSaysSo) {
  const CommandResult r = run(test::stories_plan("1x2", "2x1"), "plan.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("plan " + path("plan.json") +
                       ": prefill 1x2 [0-1], decode 2x1 [0] [1]; cost-model schedules\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// The kernel table a plan names, beside it or inline: installed whole, said in the log line.
TEST_F(PlanCli, APlansKernelTableRunsFromAFileOrInline) {
  const int keys =
      test::write_covering_schedule_table(generate() + " -t 2", dir_ / "plan.schedules.json");
  ASSERT_GT(keys, 0);
  Plan p = test::stories_plan();
  p.schedules = dir_ / "plan.schedules.json";
  CommandResult r = run(p, "plan.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("; schedules " + path("plan.schedules.json") + " (" +
                       std::to_string(3 * keys) + " GEMM ranges)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("sandwich: schedules:"), std::string::npos) << r.err;

  p.schedules.reset();
  p.inline_schedules = read_schedule_table(dir_ / "plan.schedules.json");
  r = run(p, "inline.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("; schedules inline in " + path("inline.json") + " (" +
                       std::to_string(3 * keys) + " GEMM ranges)\n"),
            std::string::npos)
      << r.err;
}

TEST_F(PlanCli, MissingTruncatedOrEditedPlansAreOneLineErrors) {
  expect_one_line_error(test::run_command(generate() + " --plan " + path("none.json")),
                        "sandwich-generate: error: --plan " + path("none.json") + ": no such file");
  write_plan(test::stories_plan(), dir_ / "plan.json");
  const std::string text = test::slurp(dir_ / "plan.json");
  std::ofstream(dir_ / "cut.json") << text.substr(0, text.size() / 2);
  expect_one_line_error(test::run_command(generate() + " --plan " + path("cut.json")),
                        path("cut.json") + ": invalid JSON");

  struct Edit {
    std::function<void(json&)> change;
    std::string error;
  };
  const std::vector<Edit> edits = {
      {[](json& j) { j["version"] = 2; },
       ": version: expected 1 (this build reads only it), got 2"},
      {[](json& j) { j["format"] = "sandwich-plan-x"; }, ": format: expected \"sandwich-plan\""},
      {[](json& j) { j["prefill"]["config"] = "3x7"; },
       ": prefill: '3x7': 3 ranks is more than this machine's"},
      {[](json& j) { j["decode"] = "banana"; },
       ": decode: 'banana' is neither RxT (e.g. 2x1) nor a JSON service configuration"},
      {[](json& j) { j["model"]["dim"] = "64"; }, ": model.dim: expected an integer, got \"64\""},
      {[](json& j) { j["machine"]["l2_bytes"] = 1.5; }, ": machine.l2_bytes: expected an integer"},
      {[](json& j) { j["model"].erase("n_layers"); }, ": model.n_layers: missing"},
      {[](json& j) { j.erase("decode"); }, ": decode: missing"},
      {[](json& j) { j["schedules"] = 3; }, ": schedules: must be the path of a schedule table"},
      {[](json& j) {
         j["schedules"] = {{"format", "sandwich-schedules"}, {"version", 1}};
       },
       ": schedules: machine: missing"},
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    const std::string name = "edit" + std::to_string(i) + ".json";
    fs::copy_file(dir_ / "plan.json", dir_ / name);
    edit(dir_ / name, edits[i].change);
    SCOPED_TRACE(name + ": " + edits[i].error);
    expect_one_line_error(test::run_command(generate() + " --plan " + path(name)),
                          "sandwich-generate: error: " + path(name) + edits[i].error);
  }
  // --plan-mismatch warn runs the default configuration for a phase that does not parse here.
  const CommandResult r =
      test::run_command(generate() + " --plan " + path("edit2.json") + " --plan-mismatch warn");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("sandwich-generate: warning: " + path("edit2.json") +
                       ": prefill: '3x7': 3 ranks is more than this machine's 2 CPUs; that phase "
                       "runs the default\n"),
            std::string::npos)
      << r.err;
  expect_one_line_error(test::run_command(generate() + " --plan-mismatch maybe"),
                        "--plan-mismatch must be error or warn, got 'maybe'");
}

TEST_F(PlanCli, APlanForAnotherModelIsRefusedOrWithWarnRun) {
  Plan p = test::stories_plan();
  p.model = model_identity(load_preset("llama-160m"), "bf16", "");
  expect_one_line_error(run(p, "other.json"),
                        "sandwich-generate: error: " + path("other.json") +
                            " was made for another model (dtype is \"f32\", the plan's \"bf16\"; "
                            "dim is 64, the plan's 768;");
  const CommandResult r = run(p, "other.json", " --plan-mismatch warn");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("sandwich-generate: warning: " + path("other.json") +
                       " was made for another model ("),
            std::string::npos)
      << r.err;
  // The same shapes from another weights file: a warning only.
  p = test::stories_plan();
  p.model->file_bytes += 4;
  const CommandResult w = run(p, "file.json");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(w.out, plain_text());
  EXPECT_NE(w.err.find("sandwich-generate: warning: " + path("file.json") +
                       ": the weights file differs from the one the plan was made with"),
            std::string::npos)
      << w.err;
}

TEST_F(PlanCli, APlanForAnotherMachineIsRefusedOrRunWithoutItsTable) {
  const int keys =
      test::write_covering_schedule_table(generate() + " -t 2", dir_ / "plan.schedules.json");
  ASSERT_GT(keys, 0);
  Plan p = test::stories_plan();
  p.schedules = dir_ / "plan.schedules.json";
  p.machine->cpu = "Some Other CPU";
  expect_one_line_error(run(p, "other.json"),
                        "sandwich-generate: error: " + path("other.json") +
                            " was made on another machine or kernel build (cpu is \"" +
                            this_machine_fingerprint().cpu + "\", the plan's \"Some Other CPU\")");
  const CommandResult r = run(p, "other.json", " --plan-mismatch warn");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("its configurations are used, with the cost model's schedules\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; cost-model schedules\n"), std::string::npos) << r.err;
}

// A plan's table is all or nothing: one bad schedule refuses the plan (--schedules FILE alone
// only warns, as before).
TEST_F(PlanCli, AKernelTableThatDoesNotValidateRefusesThePlan) {
  write_schedule_table(test::invalid_schedule_table(), dir_ / "bad.json");
  Plan p = test::stories_plan();
  p.schedules = dir_ / "bad.json";
  expect_one_line_error(run(p, "path.json"),
                        "sandwich-generate: error: " + path("path.json") +
                            ": its kernel table does not validate: " + path("bad.json") +
                            ": tuned schedule for N=64 K=64 f32 threads=1 M 1..1: ");
  EXPECT_NE(run(p, "path.json").err.find(" (and 1 more)\n"), std::string::npos);
  p.schedules.reset();
  p.inline_schedules = test::invalid_schedule_table();
  expect_one_line_error(run(p, "inline.json"),
                        path("inline.json") + ": its kernel table does not validate: " +
                            path("inline.json") + ": schedules: tuned schedule for N=64 K=64");
  p.inline_schedules.reset();
  p.schedules = dir_ / "missing.json";
  expect_one_line_error(run(p, "missing.json.plan"), path("missing.json.plan") +
                                                         ": its kernel table: schedule table " +
                                                         path("missing.json") + ": no such file");
  std::ofstream(dir_ / "cut.json") << R"({"format": "sandwich-sched)";
  p.schedules = dir_ / "cut.json";
  expect_one_line_error(run(p, "cut.plan"), path("cut.plan") +
                                                ": its kernel table: schedule table " +
                                                path("cut.json") + ": invalid JSON");
  ScheduleTable foreign = test::empty_schedule_table();
  foreign.machine.l2_bytes += 1024;
  write_schedule_table(foreign, dir_ / "foreign.json");
  p.schedules = dir_ / "foreign.json";
  expect_one_line_error(run(p, "foreign.plan"), path("foreign.json") +
                                                    " was tuned on another machine or kernel "
                                                    "build (L2 is ");

  // Warn: what validates is installed, each entry skipped is a warning; the same text.
  p.schedules = dir_ / "bad.json";
  CommandResult r = run(p, "path.json", " --plan-mismatch warn");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain_text());
  EXPECT_NE(r.err.find("sandwich: schedules: " + path("bad.json") + ": tuned schedule for"),
            std::string::npos)
      << r.err;
  // --schedules wins over the plan's table and, given alone, only warns.
  write_plan(test::stories_plan(), dir_ / "plain.json");
  for (const std::string& plan : {std::string(), " --plan " + path("plain.json")}) {
    r = test::run_command(generate() + plan + " --schedules " + path("bad.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, plain_text());
    EXPECT_NE(r.err.find("sandwich: schedules: " + path("bad.json")), std::string::npos) << r.err;
  }
}

// sandwich-bench engine: the same checks (one place), its own log line and JSON.
TEST_F(PlanCli, BenchEngineRunsAPlanAndRefusesOneForAnotherModel) {
  const std::string bench =
      (test::bin_dir() / "sandwich-bench").string() + " engine --model " + test::stories_weights() +
      " --prompt-tokens 8 --gen-tokens 4 -r 1 --warmup 0 --json " + path("r.json");
  const int keys =
      test::write_covering_schedule_table(generate() + " -t 2", dir_ / "plan.schedules.json");
  ASSERT_GT(keys, 0);
  Plan p = test::stories_plan("1x2", "2x1");
  p.inline_schedules = read_schedule_table(dir_ / "plan.schedules.json");
  write_plan(p, dir_ / "plan.json");
  CommandResult r = test::run_command(bench + " --plan " + path("plan.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("sandwich-bench engine: plan " + path("plan.json") +
                       ": prefill 1x2 [0-1], decode 2x1 [0] [1]; schedules inline in " +
                       path("plan.json")),
            std::string::npos)
      << r.err;
  const json j = json::parse(test::slurp(dir_ / "r.json"));
  EXPECT_EQ(j["schedules"], path("plan.json") + ": schedules");
  EXPECT_GT(j["schedule_ranges"].get<int>(), 0);
  EXPECT_EQ(j["results"][1]["config"], p.decode.to_json());

  p.model->shape.n_layers = 12;
  write_plan(p, dir_ / "other.json");
  r = test::run_command(bench + " --plan " + path("other.json"));
  expect_one_line_error(r, "sandwich-bench engine: error: " + path("other.json") +
                               " was made for another model (n_layers is 5, the plan's 12)");
  r = test::run_command(bench + " --plan " + path("nothing.json"));
  expect_one_line_error(r, "--plan " + path("nothing.json") + ": no such file");
}

}  // namespace
}  // namespace sandwich::engine
