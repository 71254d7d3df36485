// The planner's stages called one by one, on the simulator's side (a dry run on a shipped
// topology): no engine steps, no kernel tuning.
#include "tuner/planner/plan_stages.h"

#include <gtest/gtest.h>

#include "common/cli.h"
#include "engine/plans/plan.h"

namespace sandwich::tuner {
namespace {

PlanRequest dry_run(const std::string& topology) {
  PlanRequest r;
  r.load.model = "llama3-8b";
  r.topology = topology;
  r.dry_run = true;
  r.quiet = true;
  r.top_k = 2;
  return r;
}

TEST(PlanStages, SearchOfADryRunRanksCandidatesOfEachPhase) {
  PlanRun run(prepare_plan(dry_run("kunpeng920-4s")), {});
  EXPECT_FALSE(run.machine.local);
  EXPECT_EQ(run.decode_batch, 1);  // llama3-8b's own SLO is single-sequence
  PlanRequest batched = dry_run("kunpeng920-4s");
  batched.slo = "batched-1.3b";
  EXPECT_EQ(prepare_plan(batched).decode_batch, 16);
  ASSERT_TRUE(run.search_params && run.search_trace);
  plan_search(run);
  EXPECT_TRUE(run.state.has("search"));
  ASSERT_EQ(run.state.prefill.size(), 2u);
  ASSERT_EQ(run.state.decode.size(), 2u);
  EXPECT_LE(run.state.prefill[0].simulated_ms, run.state.prefill[1].simulated_ms);
  EXPECT_GT(run.state.decode[0].simulated_decode_1_ms, 0);
  EXPECT_FALSE(run.state.prefill[0].measured_ms);
  const std::string report = dry_run_report(run);
  EXPECT_NE(report.find("topology   kunpeng920-4s"), std::string::npos) << report;
  EXPECT_NE(report.find("by the simulator alone: prefill "), std::string::npos) << report;
}

TEST(PlanStages, TheStateSurvivesJson) {
  // Configurations are read back for this machine: one of its CPUs.
  PlanState st;
  st.options = resume_options_json(dry_run("kunpeng920-4s"));
  st.done = {"search", "measure"};
  st.seconds = {{"search", 1.5}, {"measure", 2}};
  st.prefill.push_back({engine::single_rank_config(1), 12.5});
  st.prefill[0].measured_ms = 11;
  st.decode.push_back({engine::single_rank_config(1), 3, 0.5});
  st.trace = {{100, 20}, {7, 300}};
  st.kernel_cap = 64;
  const PlanState back = PlanState::from_json(st.to_json());
  EXPECT_EQ(back.to_json(), st.to_json());
  EXPECT_EQ(back.prefill[0].measured_ms.value_or(0), 11);
  EXPECT_FALSE(back.decode[0].measured_ms);
  EXPECT_DOUBLE_EQ(back.spent(), 3.5);
  EXPECT_TRUE(back.has("measure"));
  EXPECT_FALSE(back.has("choose"));
  EXPECT_THROW(PlanState::from_json({{"format", "something else"}}), std::invalid_argument);
}

TEST(PlanStages, PrepareRefusesOptionsThatDoNotGoTogether) {
  PlanRequest r = dry_run("kunpeng920-4s");
  r.out = "plan.json";
  try {
    prepare_plan(r);
    FAIL() << "a dry run with -o was accepted";
  } catch (const CliError& e) {
    EXPECT_STREQ(e.what(), "--dry-run writes no plan; drop -o");
  }
  r = dry_run("kunpeng920-4s");
  r.dry_run = false;
  r.out = "plan.json";
  EXPECT_THROW(prepare_plan(r), CliError);  // another machine is never measured
}

}  // namespace
}  // namespace sandwich::tuner
