#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "topotree/hwloc_loader.h"
#include "tuner/config_search.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"

namespace sandwich::tuner {
namespace {

RequestTrace trace() {
  RequestTrace t;
  t.requests = {{200, 100}, {600, 50}, {40, 300}};
  return t;
}

// Counts evaluations and returns a fixed function of the configuration.
class CountingEvaluator : public ConfigEvaluator {
 public:
  explicit CountingEvaluator(std::function<double(const topotree::ServiceConfig&)> f)
      : f_(std::move(f)) {}
  std::string name() const override { return "counting"; }
  Prediction evaluate(const topotree::ServiceConfig& c, Phase) override {
    ++calls;
    seen.push_back(c);
    Prediction p;
    p.ms = f_(c);
    return p;
  }
  int calls = 0;
  std::vector<topotree::ServiceConfig> seen;

 private:
  std::function<double(const topotree::ServiceConfig&)> f_;
};

void expect_consistent(const SearchStats& s) {
  EXPECT_EQ(s.configs_cut, s.configs_deduplicated + s.configs_filtered + s.configs_early_stopped +
                               s.configs_evaluated);
  EXPECT_EQ(s.trees.explored(), s.trees.group_trees + s.trees.remove_trees);
  EXPECT_LE(s.trees.pruned, s.trees.remove_trees);
}

TEST(ConfigSearch, HeadCountsFilterRankCounts) {
  engine::ModelConfig m = engine::load_preset("llama3-8b");  // 32 query heads, 8 KV heads
  EXPECT_TRUE(heads_divisible(m, 8));
  EXPECT_FALSE(heads_divisible(m, 16));
  EXPECT_FALSE(heads_divisible(m, 3));
  const MachineDescription k = load_machine("kunpeng920-4s");
  CountingEvaluator ev([](const topotree::ServiceConfig& c) { return 100.0 / c.total_threads(); });
  SearchOptions o;
  o.phase = Phase::Prefill;
  const SearchResult r = search_configs(k.tree, m, ev, o);
  for (const auto& c : ev.seen) EXPECT_TRUE(heads_divisible(m, c.rank_count())) << c.to_string();
  std::set<int> counts;
  for (const auto& c : ev.seen) counts.insert(c.rank_count());
  EXPECT_EQ(counts, (std::set<int>{1, 2, 4, 8}));
  EXPECT_GT(r.stats.configs_filtered, 0);
  expect_consistent(r.stats);
}

TEST(ConfigSearch, PrefillUsesEveryCoreDecodeAlsoFewer) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  const engine::ModelConfig m = engine::load_preset("llama3-8b");
  LatencySimulator sim(k.tree, *k.params, m, trace());
  SearchOptions o;
  o.phase = Phase::Prefill;
  o.top_k = 100;
  const SearchResult p = search_configs(k.tree, m, sim, o);
  for (const auto& rc : p.ranked)
    EXPECT_EQ(rc.config.total_threads(), 192) << rc.config.to_string();
  EXPECT_EQ(p.stats.trees.remove_trees, 0);
  o.phase = Phase::Decode;
  const SearchResult d = search_configs(k.tree, m, sim, o);
  EXPECT_GT(d.stats.trees.remove_trees, 0);
  EXPECT_GT(d.stats.trees.pruned, 0);
  EXPECT_LT(d.ranked.front().config.total_threads(), 192)
      << "contention: the best decode config removes cores";
  EXPECT_FALSE(d.ranked.front().config.spans_numa());
  for (size_t i = 1; i < d.ranked.size(); ++i)
    EXPECT_LE(d.ranked[i - 1].prediction.ms, d.ranked[i].prediction.ms);
  EXPECT_TRUE(std::isfinite(d.ranked.front().other_phase.ms))
      << "the simulator also fills in prefill";
  expect_consistent(p.stats);
  expect_consistent(d.stats);
}

TEST(ConfigSearch, KunpengSearchIsFast) {
  const engine::ModelConfig m = engine::load_preset("llama3-8b");
  for (const std::string name : {"kunpeng920-4s", "kunpeng920-4s-clusters"}) {
    const MachineDescription k = load_machine(name);
    LatencySimulator sim(k.tree, *k.params, m, trace());
    SearchOptions o;
    o.phase = Phase::Decode;
    const SearchResult r = search_configs(k.tree, m, sim, o);
    EXPECT_LT(r.stats.seconds, 10.0) << name;
    EXPECT_FALSE(r.stats.trees.truncated);
  }
}

TEST(ConfigSearch, TopKAndDeduplication) {
  const auto tree = topotree::load_topology("pack:2 [numa] core:4 pu:1").tree;
  engine::ModelConfig m =
      engine::load_preset("llama-160m");  // 12 heads: 1, 2, 4 ranks fit (and 3, 6, 12)
  CountingEvaluator ev([](const topotree::ServiceConfig& c) {
    return 10.0 + c.rank_count() - 0.01 * c.total_threads();
  });
  SearchOptions o;
  o.phase = Phase::Decode;
  o.top_k = 3;
  o.patience = 0;
  const SearchResult r = search_configs(tree, m, ev, o);
  ASSERT_EQ(r.ranked.size(), 3u);
  EXPECT_EQ(r.ranked[0].config.rank_count(), 1);
  EXPECT_EQ(r.ranked[0].config.total_threads(), 8);
  // Each distinct configuration is evaluated once.
  std::set<uint64_t> keys;
  for (const auto& c : ev.seen) EXPECT_TRUE(keys.insert(c.key()).second) << c.to_string();
  EXPECT_GT(r.stats.configs_deduplicated, 0);
  EXPECT_EQ(r.stats.configs_early_stopped, 0);
  expect_consistent(r.stats);
}

TEST(ConfigSearch, EarlyStoppingDiscardsTheRestOfAGroup) {
  const auto tree = topotree::load_topology("pack:1 core:16 pu:1").tree;
  const engine::ModelConfig m = engine::load_preset("llama-160m");
  // Within a group (same ranks and placement), more threads is better: every remove is worse.
  auto f = [](const topotree::ServiceConfig& c) { return 100.0 - c.total_threads(); };
  SearchOptions o;
  o.phase = Phase::Decode;
  o.patience = 2;
  CountingEvaluator ev(f);
  const SearchResult r = search_configs(tree, m, ev, o);
  EXPECT_GT(r.stats.groups_stopped, 0);
  // With patience off, nothing is skipped.
  o.patience = 0;
  CountingEvaluator all(f);
  const SearchResult r0 = search_configs(tree, m, all, o);
  EXPECT_EQ(r0.stats.configs_early_stopped, 0);
  EXPECT_EQ(r0.stats.groups_stopped, 0);
  EXPECT_LT(ev.calls, all.calls) << "early stopping saves evaluations";
  EXPECT_EQ(r.ranked.front().config, r0.ranked.front().config);
  EXPECT_EQ(r.ranked.front().config.total_threads(), 16);
  expect_consistent(r.stats);
}

TEST(ConfigSearch, AModelNoConfigurationFitsIsAClearError) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  const engine::ModelConfig m =
      engine::load_preset("llama-160m");  // 12 heads; NUMA-local prefill ranks: 8, 16, 24, ...
  LatencySimulator sim(k.tree, *k.params, m, trace());
  SearchOptions o;
  o.phase = Phase::Prefill;
  o.numa_local = true;
  try {
    search_configs(k.tree, m, sim, o);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no service configuration of this topology fits llama-160m"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("12 query heads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--numa-local"), std::string::npos) << msg;
  }
  // Decode can remove a die per package: 4 NUMA-local ranks divide 12.
  o.phase = Phase::Decode;
  const SearchResult d = search_configs(k.tree, m, sim, o);
  EXPECT_FALSE(d.ranked.empty());
  for (const auto& rc : d.ranked) EXPECT_FALSE(rc.config.spans_numa());
}

}  // namespace
}  // namespace sandwich::tuner
