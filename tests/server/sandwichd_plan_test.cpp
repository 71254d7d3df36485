// sandwichd with a plan file: it serves with exactly the plan's configurations and kernel table
// and says so at start-up; a plan for another model or machine, or one whose table does not
// validate, stops it before it serves, with one error line. Without a plan it serves the
// configurations the latency simulator chooses for this machine, and says so.
#include <gtest/gtest.h>

#include <fstream>

#include "command.h"
#include "covering_schedule_table.h"
#include "engine/formats/model_config.h"
#include "http_test_client.h"
#include "plan_files.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

std::string generate_args() {
  const std::string a = stories_daemon_args();
  return a.substr(0, a.find(" --served"));
}

// What sandwich-generate prints for a greedy prompt without a plan (without the final newline).
std::string generate_text(const std::string& prompt, int n) {
  const CommandResult r =
      run_command((bin_dir() / "sandwich-generate").string() + " " + generate_args() +
                  " -q --temperature 0 -n " + std::to_string(n) + " --prompt '" + prompt + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out.substr(0, r.out.size() - 1);
}

std::string completion_text(const Daemon& d, const std::string& prompt, int n) {
  const auto r = Client(d.port()).post(
      "/v1/completions",
      {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.j()["choices"][0]["text"].get<std::string>() : "";
}

class SandwichdPlan : public ::testing::Test {
 protected:
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // sandwichd that must refuse to start: its exit code and stderr (a time limit in case it
  // serves instead).
  CommandResult refused(const std::string& args) const {
    return run_command("timeout 60 " + (bin_dir() / "sandwichd").string() + " --port 0 " +
                       stories_daemon_args() + " " + args);
  }
  TempDir dir_;
};

TEST_F(SandwichdPlan, ServesWithThePlansConfigurationsAndTableAndLogsThem) {
  const int keys = write_covering_schedule_table(
      (bin_dir() / "sandwich-generate").string() + " " + generate_args() +
          " -q -n 4 --temperature 0 --prefill-config 1x2 --decode-config 2x1",
      dir_ / "plan.schedules.json");
  ASSERT_GT(keys, 0);
  engine::Plan p = stories_plan("1x2", "2x1");
  p.schedules = dir_ / "plan.schedules.json";
  engine::write_plan(p, dir_ / "plan.json");
  Daemon d(stories_daemon_args() + " --plan " + path("plan.json"));
  ASSERT_NE(d.port(), 0);
  const std::string prompt = "Once upon a time, there was a big dog";
  EXPECT_EQ(completion_text(d, prompt, 40), generate_text(prompt, 40));
  EXPECT_NE(d.log().find("sandwichd: plan " + path("plan.json") +
                         ": prefill 1x2 [0-1], decode 2x1 [0] [1]; schedules " +
                         path("plan.schedules.json") + " ("),
            std::string::npos)
      << d.log();
  EXPECT_NE(d.log().find("prefill 1x2 [0-1], decode 2x1 [0] [1]; all-reduce rank-shifted, "
                         "split-k, a configuration per phase\n"),
            std::string::npos)
      << d.log();  // the ready line
  EXPECT_EQ(d.log().find("sandwich: schedules:"), std::string::npos) << d.log();
  EXPECT_EQ(d.log().find("warning"), std::string::npos) << d.log();
}

TEST_F(SandwichdPlan, WithoutAPlanTheSimulatorChoosesAndTheLogSaysSo) {
  Daemon d(stories_daemon_args());
  ASSERT_NE(d.port(), 0);
  const std::string log = d.log();
  const size_t at = log.find("sandwichd: no plan: prefill ");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find(" chosen by the latency simulator in "), std::string::npos) << line;
  EXPECT_NE(line.find("(sandwich-tune plan measures and tunes them); cost-model schedules"),
            std::string::npos)
      << line;
  const std::string prompt = "Lily went to the park";
  EXPECT_EQ(completion_text(d, prompt, 30), generate_text(prompt, 30));
  // --threads keeps one rank of that many cores: no search.
  Daemon t(stories_daemon_args() + " --threads 1");
  ASSERT_NE(t.port(), 0);
  EXPECT_NE(t.log().find("sandwichd: no plan: prefill 1x1 [0], decode 1x1 [0]; cost-model "
                         "schedules\n"),
            std::string::npos)
      << t.log();
}

// The ablation switches (the paper's Table 1): decode runs prefill's two ranks, which sum over
// the naive all-reduce, with no split-k; the start-up lines say so and greedy text is unchanged.
TEST_F(SandwichdPlan, AblationSwitchesServeTheSameTextAndTheLogSaysWhichAreOn) {
  Daemon d(stories_daemon_args() +
           " --prefill-config 2x1 --decode-config 1x2 --same-config --allreduce naive "
           "--no-split-k");
  ASSERT_NE(d.port(), 0);
  const std::string prompt = "Once upon a time, there was a big dog";
  EXPECT_EQ(completion_text(d, prompt, 40), generate_text(prompt, 40));
  EXPECT_NE(d.log().find("sandwichd: no plan: prefill 2x1 [0] [1], decode 2x1 [0] [1] "
                         "(--same-config); cost-model schedules\n"),
            std::string::npos)
      << d.log();
  EXPECT_NE(d.log().find("prefill 2x1 [0] [1], decode 2x1 [0] [1]; all-reduce naive, no "
                         "split-k, one configuration for both phases\n"),
            std::string::npos)
      << d.log();  // the ready line
}

// One error line after the loading line, a non-zero exit, never "listening".
void expect_refused(const CommandResult& r, const std::string& error) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
  EXPECT_LT(r.err.find("sandwichd: loading "), r.err.find('\n')) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  EXPECT_NE(r.err.find("\nsandwichd: error: " + error), std::string::npos) << r.err;
}

TEST_F(SandwichdPlan, RefusesAPlanThatDoesNotFitBeforeItServes) {
  engine::Plan other_model = stories_plan();
  other_model.model = engine::model_identity(engine::load_preset("llama-160m"), "bf16", "");
  engine::write_plan(other_model, dir_ / "model.json");
  expect_refused(refused("--plan " + path("model.json")),
                 path("model.json") +
                     " was made for another model (dtype is \"f32\", the plan's "
                     "\"bf16\"; dim is 64, the plan's 768;");
  engine::Plan other_machine = stories_plan();
  other_machine.machine->isa = "avx2";
  engine::write_plan(other_machine, dir_ / "machine.json");
  expect_refused(refused("--plan " + path("machine.json")),
                 path("machine.json") + " was made on another machine or kernel build (isa is \"");
  engine::Plan bad_table = stories_plan();
  bad_table.inline_schedules = invalid_schedule_table();
  engine::write_plan(bad_table, dir_ / "table.json");
  expect_refused(refused("--plan " + path("table.json")),
                 path("table.json") + ": its kernel table does not validate: ");
  std::ofstream(dir_ / "cut.json") << test::slurp(dir_ / "table.json").substr(0, 200);
  const CommandResult cut = refused("--plan " + path("cut.json"));
  EXPECT_EQ(cut.code, 1);
  EXPECT_EQ(cut.err, "sandwichd: error: plan " + path("cut.json") + ": invalid JSON" +
                         cut.err.substr(cut.err.find(" (")));  // before it loads the model
}

TEST_F(SandwichdPlan, PlanMismatchWarnServesWithAWarning) {
  engine::Plan p = stories_plan("2x1", "1x2");
  p.model = engine::model_identity(engine::load_preset("llama-160m"), "bf16", "");
  engine::write_plan(p, dir_ / "model.json");
  Daemon d(stories_daemon_args() + " --plan " + path("model.json") + " --plan-mismatch warn");
  ASSERT_NE(d.port(), 0);
  const std::string prompt = "The cat";
  EXPECT_EQ(completion_text(d, prompt, 20), generate_text(prompt, 20));
  EXPECT_NE(
      d.log().find("sandwichd: warning: " + path("model.json") + " was made for another model ("),
      std::string::npos)
      << d.log();
  EXPECT_NE(d.log().find("sandwichd: plan " + path("model.json") +
                         ": prefill 2x1 [0] [1], decode 1x2 [0-1]; cost-model schedules\n"),
            std::string::npos)
      << d.log();
}

}  // namespace
}  // namespace sandwich::test
