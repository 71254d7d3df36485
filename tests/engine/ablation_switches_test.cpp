// The paper's ablation switches (Table 1) in the engine: the naive all-reduce, GEMMs without
// split-k and one configuration for both phases run the same model to the same tokens.
#include <bit>
#include <cmath>
#include <fstream>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/generator.h"
#include "kernels/tuned_schedules.h"
#include "model_fixtures.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

std::string greedy_text(const Model& m, const std::string& config, AblationSwitches ablation) {
  GeneratorOptions o;
  o.prefill = o.decode = topotree::parse_service_config(config);
  o.ablation = ablation;
  Generator g(m, o);
  GenerationRequest r;
  r.prompt = m.tokenizer->encode("Once upon a time, there was a big dog", true);
  r.max_tokens = 80;
  r.sampling.temperature = 0;
  return g.generate(r).text;
}

TEST(AblationSwitches, NaiveAllReduceGivesTheSameGreedyTokensOnTwoRanks) {
  SANDWICH_REQUIRE_DATA();
  const auto m = load_model(test::stories_load_options());
  const std::string shifted = greedy_text(*m, "2x1", {});
  EXPECT_EQ(greedy_text(*m, "2x1", {.allreduce = AllReduceAlgorithm::Naive}), shifted);
  EXPECT_EQ(greedy_text(*m, "1x2", {}), shifted);
}

TEST(AblationSwitches, NoSplitKGivesTheSameGreedyTokens) {
  SANDWICH_REQUIRE_DATA();
  const auto m = load_model(test::stories_load_options());
  const std::string text = greedy_text(*m, "1x2", {});
  EXPECT_EQ(greedy_text(*m, "1x2", {.no_split_k = true}), text);
  EXPECT_EQ(greedy_text(*m, "2x1", {.no_split_k = true}), text);
}

// A table whose every schedule splits K over the two threads (the keys the pass asks for,
// collected from the table's misses); `moved` gives each M the schedule without_split_k makes
// of it instead.
std::shared_ptr<kernels::TunedSchedules> split_k_table(const std::vector<kernels::GemmKey>& keys,
                                                       bool moved, int64_t prompt) {
  auto t = std::make_shared<kernels::TunedSchedules>();
  for (const kernels::GemmKey& key : keys) {
    kernels::Schedule s = kernels::default_schedule(kernels::shape_at(key, 1));
    s.tm = s.tn = 1;
    s.tk = 2;
    if (!moved) {
      t->add(key, 1, 1 << 16, s);
      continue;
    }
    t->add(key, 1, 1, kernels::without_split_k(s, 1, key.n));
    t->add(key, 2, 1 << 16, kernels::without_split_k(s, prompt, key.n));
  }
  return t;
}

// Every GEMM of a prompt's step under a split-k table: with no_split_k the logits are bit for
// bit those of the table's schedules with their K threads moved (so the switch reached every
// GEMM and ran tk = 1), not those of the split sums, and within float tolerance of them.
TEST(AblationSwitches, NoSplitKRunsATablesSplitKSchedulesWithOneKThread) {
  test::TempDir dir;
  test::write_llama_config(dir.path(), {256, 2, 4, 2, 384, 1000, 256});
  const auto m = load_model(test::dummy_weights(dir.path(), WeightDType::F32));
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  std::vector<int32_t> prompt, blocks;
  for (int i = 0; i < 40; ++i) prompt.push_back((i * 31 + 7) % 1000);
  ASSERT_TRUE(kv.reserve(blocks, 48));
  const auto logits = [&](bool no_split_k) {
    ExecutorLimits lim;
    lim.max_tokens = 64;
    lim.max_entries = 1;
    lim.ablation.no_split_k = no_split_k;
    auto ex = make_executor(*m, kv, topotree::parse_service_config("1x2"), lim);
    std::vector<float> out(1000);
    BatchEntry e{prompt, 0, blocks, true};
    ex->run({&e, 1}, out.data());
    return out;
  };
  std::vector<kernels::GemmKey> keys;
  kernels::install_tuned_schedules(std::make_shared<kernels::TunedSchedules>(),
                                   [&](const kernels::GemmKey& k) { keys.push_back(k); });
  logits(false);
  ASSERT_FALSE(keys.empty());
  kernels::install_tuned_schedules(split_k_table(keys, false, 40));
  const std::vector<float> split = logits(false), no_split = logits(true);
  kernels::install_tuned_schedules(split_k_table(keys, true, 40));
  const std::vector<float> moved = logits(false);
  kernels::install_tuned_schedules(nullptr);
  int differ = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(no_split[i]), std::bit_cast<uint32_t>(moved[i])) << i;
    ASSERT_NEAR(no_split[i], split[i], 1e-4 * (1 + std::fabs(split[i]))) << i;
    differ += no_split[i] != split[i];
  }
  EXPECT_GT(differ, 0) << "the split sums should round differently somewhere";
}

TEST(AblationSwitches, SameConfigRunsPrefillsConfigurationForBothPhases) {
  test::TempDir dir;
  std::ofstream(dir / "p.json") << R"({"prefill":"1x2","decode":"2x1"})";
  PlanOptions o;
  o.same_config = true;
  o.plan = (dir / "p.json").string();
  ResolvedPlan r = resolve_plan(o);
  EXPECT_TRUE(r.same_config);
  EXPECT_EQ(r.plan.decode, r.plan.prefill);
  EXPECT_EQ(r.plan.decode.to_string(), "1x2 [0-1]");
  o.plan.reset();
  o.prefill_config = "2x1";
  o.decode_config = "1x2";
  r = resolve_plan(o);
  EXPECT_EQ(r.plan.decode.to_string(), "2x1 [0] [1]");
  // Nothing chose either phase: both stay a default that a tool may replace, together.
  o.prefill_config.reset();
  o.decode_config.reset();
  r = resolve_plan(o);
  EXPECT_TRUE(r.prefill_default);
  EXPECT_TRUE(r.decode_default);
  o.same_config = false;
  o.decode_config = "2x1";
  EXPECT_EQ(describe_switches(o), "all-reduce rank-shifted, split-k, a configuration per phase");
  o.same_config = true;
  o.ablation = {.allreduce = AllReduceAlgorithm::Naive, .no_split_k = true};
  EXPECT_EQ(describe_switches(o),
            "all-reduce naive, no split-k, one configuration for both phases");
}

}  // namespace
}  // namespace sandwich::engine
