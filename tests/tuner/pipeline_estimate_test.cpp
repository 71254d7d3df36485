// Pipeline-parallel serving over nodes: the timing terms on hand-computed cases, the layer split,
// memory per node (a 70B model on one and two 125 GiB nodes) and the estimate's consistency
// with the one-node simulator.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "topotree/service_config.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"
#include "tuner/pipeline_estimate.h"

#include "small_trace.h"

namespace sandwich::tuner {
namespace {

TEST(PipelineTiming, HandComputedTwoStages) {
  // Stages of 1 s and 2 s, hops of 0.5 s.
  const PipelineTiming one = pipeline_timing({1, 2}, 0.5, 1);
  EXPECT_DOUBLE_EQ(one.latency_s, 3.5);    // 1 + 2 + one hop
  EXPECT_DOUBLE_EQ(one.period_s, 2);       // the slower stage
  EXPECT_DOUBLE_EQ(one.step_s, 5);         // (1 + 2 - 1) x (2 + 0.5)
  EXPECT_DOUBLE_EQ(one.utilization, 0.3);  // 1 x 3 / (2 x 5)
  const PipelineTiming two = pipeline_timing({1, 2}, 0.5, 2);
  EXPECT_DOUBLE_EQ(two.step_s, 7.5);       // (2 + 2 - 1) x 2.5
  EXPECT_DOUBLE_EQ(two.utilization, 0.4);  // 2 x 3 / (2 x 7.5)
  // A hop slower than every stage sets the period.
  EXPECT_DOUBLE_EQ(pipeline_timing({1, 1}, 3).period_s, 3);
}

TEST(PipelineTiming, TheBubbleShrinksWithMicroBatches) {
  // Four equal stages, no hop: utilization M / (M + P - 1).
  for (int m : {1, 2, 4, 8, 16}) {
    const PipelineTiming t = pipeline_timing({1, 1, 1, 1}, 0, m);
    EXPECT_DOUBLE_EQ(t.step_s, m + 3.0);
    EXPECT_DOUBLE_EQ(t.utilization, m / (m + 3.0));
  }
  // One stage: no hop, no bubble.
  const PipelineTiming single = pipeline_timing({2}, 100, 3);
  EXPECT_DOUBLE_EQ(single.latency_s, 2);
  EXPECT_DOUBLE_EQ(single.step_s, 6);
  EXPECT_DOUBLE_EQ(single.utilization, 1);
}

TEST(PipelineSplit, BalancedWithTheHeadOnTheLastStage) {
  EXPECT_EQ(balanced_layer_split(80, 1, 1, 5), std::vector<int>({80}));
  EXPECT_EQ(balanced_layer_split(80, 2, 1, 0), std::vector<int>({40, 40}));
  EXPECT_EQ(balanced_layer_split(80, 2, 1, 2), std::vector<int>({41, 39}));
  EXPECT_EQ(balanced_layer_split(10, 3, 1, 0), std::vector<int>({4, 3, 3}));
  // 21 is the least slowest stage can take: 20 each would leave 22.4 on the last.
  EXPECT_EQ(balanced_layer_split(80, 4, 1, 2.4), std::vector<int>({21, 21, 20, 18}));
  EXPECT_EQ(balanced_layer_split(3, 3, 1, 9), std::vector<int>({1, 1, 1}));
  EXPECT_THROW(balanced_layer_split(2, 3, 1, 0), std::invalid_argument);
}

topotree::ServiceConfig one_rank_of_all(const MachineDescription& m) {
  topotree::ServiceConfig c;
  c.ranks.push_back({0, {0}, std::vector<int>(m.tree.cpus().begin(), m.tree.cpus().end())});
  return c;
}

class Llama70bOnEmeraldRapids : public ::testing::Test {
 protected:
  MachineDescription node = load_machine("xeon-emr-16c");
  engine::ModelConfig model = engine::load_preset("llama3-70b");
  LatencySimulator sim{node.tree, *node.params, model, test::small_trace()};
  topotree::ServiceConfig all = one_rank_of_all(node);
  PipelineOptions options(int stages) const {
    PipelineOptions o;
    o.stages = stages;
    o.link = NodeLink{.name = "25GbE", .latency_us = 25, .gbs = 2.9};
    o.node_memory_bytes = node.memory_bytes;
    return o;
  }
};

TEST_F(Llama70bOnEmeraldRapids, DoesNotFitOneNodeAndFitsTwo) {
  const ModelWeightBytes w = model_weight_bytes(model, 2);
  EXPECT_NEAR(w.total(80) / 1e9, 141.1, 0.1);  // 70.6 B parameters in BF16
  const PipelineEstimate one = estimate_pipeline(sim, all, all, options(1));
  EXPECT_FALSE(one.fits);
  EXPECT_NE(one.why_not.find("141.1 GB of weights"), std::string::npos) << one.why_not;
  const PipelineEstimate two = estimate_pipeline(sim, all, all, options(2));
  EXPECT_TRUE(two.fits) << two.why_not;
  ASSERT_EQ(two.split.size(), 2u);
  EXPECT_EQ(two.split[0].layers + two.split[1].layers, 80);
  EXPECT_EQ(two.split[1].first_layer, two.split[0].layers);
  EXPECT_TRUE(two.split[0].embedding && !two.split[0].head);
  EXPECT_TRUE(two.split[1].head && !two.split[1].embedding);
  EXPECT_NEAR(two.split[0].weight_bytes + two.split[1].weight_bytes, w.total(80), 1);
  for (const auto& s : two.split) EXPECT_LT(s.weight_bytes, 0.55 * w.total(80));
}

TEST_F(Llama70bOnEmeraldRapids, OneStageIsTheSimulatorItself) {
  PipelineOptions o = options(1);
  o.node_memory_bytes = 0;
  o.decode_batches = {1};
  const PipelineEstimate e = estimate_pipeline(sim, all, all, o);
  EXPECT_NEAR(e.decode_at[0].step_ms, sim.evaluate(all, Phase::Decode).ms, 1e-9);
  EXPECT_EQ(e.decode_at[0].micro_batches, 1);
  EXPECT_DOUBLE_EQ(e.decode_at[0].utilization, 1);
  double ttft = 0;
  for (const auto& s : sim.prefill_steps(e.mean_prompt))
    ttft += sim.step_time(all, sim.rank_speeds(all), s).ms;
  EXPECT_NEAR(e.ttft_ms, ttft, 1e-9 * ttft);
}

TEST_F(Llama70bOnEmeraldRapids, StagesAddTransfersAndABubble) {
  const PipelineEstimate two = estimate_pipeline(sim, all, all, options(2));
  PipelineOptions o = options(2);
  o.node_memory_bytes = 0;
  o.link.gbs = 1e9, o.link.latency_us = 1e-9;  // a free link
  const PipelineEstimate free = estimate_pipeline(sim, all, all, o);
  // The mean prompt's hidden states cross once: latency + tokens x 8192 x 4 bytes / bandwidth.
  const double hop_ms = (25e-6 + static_cast<double>(two.mean_prompt) * 8192 * 4 / 2.9e9) * 1e3;
  EXPECT_NEAR(two.ttft_ms - free.ttft_ms, hop_ms, 1e-6 * two.ttft_ms);
  // Batch 16 goes in micro-batches; one sequence cannot be split and keeps one stage busy.
  ASSERT_EQ(two.decode_at.size(), 2u);
  EXPECT_EQ(two.decode_at[0].micro_batches, 1);
  EXPECT_NEAR(two.decode_at[0].utilization, 0.5, 0.02);
  EXPECT_GE(two.decode_at[1].micro_batches, 2);
  EXPECT_GT(two.decode_at[1].utilization, two.decode_at[0].utilization);
  EXPECT_LT(two.decode_at[1].utilization, 1);
  // With chunks of several requests in flight, two stages prefill faster than one would.
  PipelineOptions one = options(1);
  one.node_memory_bytes = 0;
  EXPECT_GT(two.prefill_tokens_per_s,
            1.8 * estimate_pipeline(sim, all, all, one).prefill_tokens_per_s);
}

}  // namespace
}  // namespace sandwich::tuner
