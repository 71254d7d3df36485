// The parts of running a plan that need no tool: what the options resolve to before the model
// loads (which phase is left to a default, where the table comes from, what warn mode keeps),
// and schedule_table_problems, the strict check of a plan's kernel table.
#include "engine/plans/plan_check.h"

#include <gtest/gtest.h>

#include <fstream>

#include "covering_schedule_table.h"
#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/tool_options.h"
#include "plan_files.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

namespace fs = std::filesystem;

TEST(PlanCheck, OptionsOverThePlanOverTheDefault) {
  test::TempDir dir;
  std::ofstream(dir / "p.json") << R"({"prefill": "2x1", "decode": "1x2", "schedules": "t.json"})";
  PlanOptions o;
  ResolvedPlan r = resolve_plan(o);
  EXPECT_TRUE(r.prefill_default && r.decode_default);
  EXPECT_EQ(r.plan.prefill, single_rank_config(0));
  EXPECT_TRUE(r.plan.file.empty());
  EXPECT_FALSE(r.table_from_plan);

  o.prefill_config = "1x1";
  r = resolve_plan(o);
  EXPECT_FALSE(r.prefill_default || r.decode_default);  // decode follows prefill's option
  EXPECT_EQ(r.plan.decode, topotree::parse_service_config("1x1"));

  o = {};
  o.plan = (dir / "p.json").string();
  r = resolve_plan(o);
  EXPECT_FALSE(r.prefill_default || r.decode_default);
  EXPECT_EQ(r.plan.prefill, topotree::parse_service_config("2x1"));
  EXPECT_EQ(r.plan.file, dir / "p.json");
  EXPECT_EQ(r.plan.version, 0);
  EXPECT_TRUE(r.table_from_plan);
  EXPECT_EQ(*r.plan.schedules, dir / "t.json");

  o.decode_config = "1x1";
  o.schedules = dir / "mine.json";
  r = resolve_plan(o);
  EXPECT_EQ(r.plan.decode, topotree::parse_service_config("1x1"));
  EXPECT_FALSE(r.table_from_plan);  // --schedules wins, and is lenient
  EXPECT_EQ(*r.plan.schedules, dir / "mine.json");
}

TEST(PlanCheck, WarnModeRunsTheDefaultForAPhaseThatDoesNotParseHere) {
  test::TempDir dir;
  std::ofstream(dir / "p.json") << R"({"prefill": "64x1", "decode": "2x1"})";
  PlanOptions o;
  o.plan = (dir / "p.json").string();
  EXPECT_THROW(resolve_plan(o), std::invalid_argument);
  o.plan_mismatch = PlanMismatch::Warn;
  ResolvedPlan r = resolve_plan(o);
  EXPECT_TRUE(r.prefill_default);
  EXPECT_FALSE(r.decode_default);
  EXPECT_EQ(r.plan.prefill, single_rank_config(0));
  EXPECT_EQ(r.plan.decode, topotree::parse_service_config("2x1"));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].rfind((dir / "p.json").string() + ": prefill: '64x1'", 0), 0u)
      << r.warnings[0];

  std::ofstream(dir / "p.json") << R"({"prefill": "1x1", "decode": "banana"})";
  r = resolve_plan(o);
  EXPECT_FALSE(r.prefill_default || r.decode_default);  // decode: prefill's, as without a plan
  EXPECT_EQ(r.plan.decode, topotree::parse_service_config("1x1"));
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(PlanCheck, AValidTableHasNoProblems) {
  ScheduleTable t = test::empty_schedule_table();
  TunedGemm g{256, 128, "bf16", 2, false, {}};
  g.ranges.push_back(
      {1, 8, kernels::default_schedule({1, 256, 128, kernels::DType::BF16, 2}).to_string(), 0, ""});
  t.gemms.push_back(g);
  t.tunables.push_back(
      {"attention_decode", {{"head_dim", 64}}, {{1, 16, {{"kv_blocks", 4}}, 0, ""}}});
  EXPECT_TRUE(schedule_table_problems(t, "t.json").empty());
}

TEST(PlanCheck, TableProblemsNameEachEntryThatWouldBeSkipped) {
  ScheduleTable t = test::invalid_schedule_table();
  t.machine.kernels = "some other build";
  t.tunables.push_back({"attention_decode",
                        {{"head_dim", 64}},
                        {{1, 16, {{"kv_blocks", 4}}, 0, ""},
                         {8, 32, {{"kv_blocks", 2}}, 0, ""},
                         {0, 4, {}, 0, ""}}});
  t.tunables.push_back(
      {"attention_decode", {{"head_dim", 128}}, {{8, 32, {{"kv_blocks", 2}}, 0, ""}}});
  const std::vector<std::string> p = schedule_table_problems(t, "t.json");
  ASSERT_EQ(p.size(), 5u) << ::testing::PrintToString(p);
  EXPECT_EQ(p[0].rfind("t.json was tuned on another machine or kernel build (kernels is \"", 0), 0u)
      << p[0];
  EXPECT_EQ(p[1].rfind("t.json: tuned schedule for N=64 K=64 f32 threads=1 M 1..1: ", 0), 0u)
      << p[1];
  EXPECT_EQ(p[2].rfind("t.json: ", 0), 0u) << p[2];
  EXPECT_NE(p[2].find("M 2..65536"), std::string::npos) << p[2];
  EXPECT_EQ(p[3], "t.json: tuned parameters of attention_decode M 8..32: overlaps M 1..16");
  EXPECT_EQ(p[4], "t.json: tuned parameters of attention_decode M 0..4: not a range of M >= 1");
}

}  // namespace
}  // namespace sandwich::engine
