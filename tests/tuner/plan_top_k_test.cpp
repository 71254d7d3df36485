// sandwich-tune plan's top-k kernel tuning, stage by stage on stories260K: the kernels of every
// measured candidate are tuned (a GEMM key of equal per-rank shapes and threads once), the tuned
// candidates are measured again and chosen by those figures beside the cost model's choice, a
// budget too short leaves the worst candidates untuned and says so, and an interrupted remeasure
// resumes without measuring again what it had.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/plans/schedule_table.h"
#include "test_data.h"
#include "tuner/model_gemms.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// One rank of one thread on `cpu`: configurations on CPUs 0 and 1 have equal GEMM keys.
topotree::ServiceConfig on_cpu(int cpu) {
  return topotree::parse_service_config("{\"ranks\": [{\"cpus\": [" + std::to_string(cpu) + "]}]}");
}

PlanCandidate measured(const topotree::ServiceConfig& c, double simulated, double ms,
                       double ms_1 = 0) {
  PlanCandidate p{c, simulated};
  p.measured_ms = ms;
  if (ms_1 > 0) {
    p.simulated_decode_1_ms = simulated / 4;
    p.measured_decode_1_ms = ms_1;
  }
  return p;
}

PlanRequest stories_request(const sandwich::test::TempDir& dir) {
  PlanRequest r;
  r.load.model = (sandwich::test::data_dir() / "models/stories260K/stories260K.bin").string();
  r.out = (dir / "p.json").string();
  r.quiet = true;
  r.max_m = 1;
  r.max_num_seqs = 4;
  r.decode_batch = 2;
  r.prefill_chunk = 64;
  r.min_seconds = 0;
  r.no_attention = true;
  r.budget_text = "10m";
  return r;
}

// The state of a run past its measure stage: prefill on CPU 0, decode on CPU 0 then CPU 1 (best
// simulated first), with made-up cost-model figures.
PlanSetup measured_setup(const PlanRequest& r) {
  PlanSetup s = prepare_plan(r);
  PlanState& st = s.state;
  st.done = {"search", "measure"};
  st.seconds = {{"search", 0}, {"measure", 0.5}};
  st.prefill = {measured(on_cpu(0), 2, 3)};
  st.decode = {measured(on_cpu(0), 1, 1.5, 0.2), measured(on_cpu(1), 1.1, 1.6, 0.2)};
  st.trace = {{40, 8}, {90, 12}};
  st.trace_source = "test";
  st.params_source = "test";
  st.prefill_samples = 1;
  return s;
}

bool two_cpus() {
  return std::thread::hardware_concurrency() >= 2;
}

TEST(PlanTopK, EveryCandidateIsTunedAndEqualKeysOnce) {
  SANDWICH_REQUIRE_DATA();
  if (!two_cpus()) GTEST_SKIP() << "needs CPUs 0 and 1";
  sandwich::test::TempDir dir;
  PlanRun run(measured_setup(stories_request(dir)), {});
  plan_kernels(run);
  const PlanState& st = run.state;
  EXPECT_EQ(st.prefill[0].kernels, "tuned");
  EXPECT_EQ(st.decode[0].kernels, "tuned");
  EXPECT_EQ(st.decode[1].kernels, "tuned");
  const auto keys = model_gemms(run.model.config, 1, 1, run.model.types);
  // Three candidates ask for the same keys: each is tuned once, on the first one's CPU.
  EXPECT_EQ(st.kernel_report.at("candidates"), 3);
  EXPECT_EQ(st.kernel_report.at("keys_asked"), 3 * keys.size());
  EXPECT_EQ(st.kernel_report.at("keys_distinct"), keys.size());
  EXPECT_EQ(st.kernel_report.at("keys_tuned"), keys.size());
  const engine::ScheduleTable t = engine::read_schedule_table(run.table_file);
  EXPECT_TRUE(t.resume_json.empty());
  EXPECT_EQ(t.gemms.size(), keys.size());
  for (const engine::TunedGemm& g : t.gemms) {
    EXPECT_EQ(g.threads, 1);
    ASSERT_FALSE(g.ranges.empty());
    EXPECT_NE(g.ranges.front().how, "untuned") << g.n << "x" << g.k;
  }
  EXPECT_NE(t.config.find("decode 1x1 [0], 1x1 [1]"), std::string::npos) << t.config;

  plan_remeasure(run);
  for (const PlanCandidate* c : {&st.prefill[0], &st.decode[0], &st.decode[1]})
    EXPECT_GT(c->tuned_ms.value_or(0), 0) << short_config(c->config);
  EXPECT_GT(st.decode[1].tuned_decode_1_ms.value_or(0), 0);
  EXPECT_TRUE(st.cuts.empty()) << st.cuts.front();

  plan_choose(run);
  EXPECT_TRUE(st.choice.contains("changed"));
  EXPECT_TRUE(st.cost_model_choice.contains("goodput_rps"));
  // The made-up cost-model figures choose decode on CPU 0.
  EXPECT_EQ(st.cost_model_choice.at("decode"), 0);
  EXPECT_EQ(st.choice.at("changed").get<bool>(), st.choice.at("decode") != 0);
}

TEST(PlanTopK, TheChoiceUsesTheTunedFiguresAndSaysWhenItChanged) {
  // No engine steps: the figures are given. Decode on CPU 1 is slower with the cost model's
  // schedules and faster tuned; prefill's second candidate was left untuned.
  SANDWICH_REQUIRE_DATA();
  if (!two_cpus()) GTEST_SKIP() << "needs CPUs 0 and 1";
  sandwich::test::TempDir dir;
  PlanSetup s = measured_setup(stories_request(dir));
  PlanState& st = s.state;
  st.prefill.push_back(measured(on_cpu(1), 2.1, 3.5));
  st.decode[0].kernels = st.decode[1].kernels = st.prefill[0].kernels = "tuned";
  st.prefill[1].kernels = "untuned";
  st.prefill[0].tuned_ms = 2.9;
  st.decode[0].tuned_ms = 1.4;
  st.decode[0].tuned_decode_1_ms = 0.19;
  st.decode[1].tuned_ms = 0.7;
  st.decode[1].tuned_decode_1_ms = 0.1;
  st.done = {"search", "measure", "kernels", "remeasure"};
  PlanRun run(std::move(s), {});
  plan_choose(run);
  EXPECT_EQ(run.state.cost_model_choice.at("decode"), 0);
  EXPECT_EQ(run.state.choice.at("decode"), 1);
  EXPECT_EQ(run.state.choice.at("prefill"), 0);
  EXPECT_TRUE(run.state.choice.at("changed").get<bool>());
  // An untuned candidate keeps its cost-model figure for the final choice.
  EXPECT_EQ(run.state.prefill[1].final_ms().value_or(0), 3.5);
  const PlanState back = PlanState::from_json(run.state.to_json());
  EXPECT_EQ(back.to_json(), run.state.to_json());
  EXPECT_EQ(back.decode[1].kernels, "tuned");
  EXPECT_EQ(back.decode[1].tuned_decode_1_ms.value_or(0), 0.1);
}

TEST(PlanTopK, ABudgetTooShortLeavesCandidatesUntunedInOrderAndSaysWhich) {
  SANDWICH_REQUIRE_DATA();
  if (!two_cpus()) GTEST_SKIP() << "needs CPUs 0 and 1";
  sandwich::test::TempDir dir;
  PlanRequest r = stories_request(dir);
  r.budget_text = "2s";
  PlanSetup s = measured_setup(r);
  s.state.seconds["measure"] = 5;  // past the budget: nothing is left for the kernels
  PlanRun run(std::move(s), {});
  plan_kernels(run);
  const PlanState& st = run.state;
  for (const PlanCandidate* c : {&st.prefill[0], &st.decode[0], &st.decode[1]})
    EXPECT_EQ(c->kernels, "untuned");
  EXPECT_EQ(st.kernel_report.at("keys_tuned"), 0);
  bool named = false;
  for (const std::string& cut : st.cuts)
    named |= cut.find("left untuned: prefill 1x1 [0], decode 1x1 [0], decode 1x1 [1]") !=
             std::string::npos;
  EXPECT_TRUE(named) << nlohmann::json(st.cuts).dump();
  // The table still covers every key (the cost model's schedules).
  EXPECT_FALSE(engine::read_schedule_table(run.table_file).gemms.empty());
  plan_remeasure(run);
  EXPECT_FALSE(st.decode[0].tuned_ms);
  plan_choose(run);
  EXPECT_FALSE(st.choice.at("changed").get<bool>());
  EXPECT_EQ(st.choice.at("decode"), st.cost_model_choice.at("decode"));
}

TEST(PlanTopK, AnInterruptedRemeasureResumesWhereItStopped) {
  SANDWICH_REQUIRE_DATA();
  if (!two_cpus()) GTEST_SKIP() << "needs CPUs 0 and 1";
  sandwich::test::TempDir dir;
  const PlanRequest r = stories_request(dir);
  std::filesystem::file_time_type table_time;
  double first_tuned_ms = 0;
  {
    PlanRun run(measured_setup(r), {});
    plan_kernels(run);
    run.save();
    table_time = std::filesystem::last_write_time(run.table_file);
    // Ctrl-C once the first candidate was measured again.
    run.stop = [&run] { return run.state.prefill[0].tuned_ms.has_value(); };
    EXPECT_THROW(plan_remeasure(run), PlanInterrupted);
    run.save();
    ASSERT_TRUE(run.state.prefill[0].tuned_ms);
    EXPECT_FALSE(run.state.decode[0].tuned_ms);
    first_tuned_ms = *run.state.prefill[0].tuned_ms;
  }
  PlanRequest again = r;
  again.resume = true;
  PlanRun run(prepare_plan(again), {});
  EXPECT_TRUE(run.state.has("kernels"));
  EXPECT_EQ(run.state.prefill[0].kernels, "tuned");
  plan_kernels(run);  // done: the table is not tuned again
  EXPECT_EQ(std::filesystem::last_write_time(run.table_file), table_time);
  plan_remeasure(run);
  EXPECT_EQ(run.state.prefill[0].tuned_ms.value_or(0), first_tuned_ms);
  EXPECT_GT(run.state.decode[0].tuned_ms.value_or(0), 0);
  EXPECT_GT(run.state.decode[1].tuned_ms.value_or(0), 0);
}

}  // namespace
}  // namespace sandwich::tuner
