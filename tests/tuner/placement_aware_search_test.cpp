// The search on a machine with a latent group: the placement hash searched beside the structure
// hash, within a bound (past it, the structure hash with a note); nothing changes without one.
// The strided Kunpeng placement must come from the simulator's contention term, not a rule.
#include "tuner/placement_aware_search.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/formats/model_config.h"
#include "topotree/transforms.h"
#include "tuner/default_plan.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"

#include "small_trace.h"

namespace sandwich::tuner {
namespace {

using test::small_trace;

constexpr PlacementBound kUnbounded{};  // results that do not depend on the machine's load

WorkloadOptions batch(int n) {
  WorkloadOptions w;
  w.decode_batch = n;
  return w;
}

// Every rank's CPUs consecutive.
bool contiguous(const topotree::ServiceConfig& c) {
  for (const auto& r : c.ranks) {
    std::vector<int> cpus = r.cpus;
    std::sort(cpus.begin(), cpus.end());
    if (cpus.back() - cpus.front() + 1 != static_cast<int>(cpus.size())) return false;
  }
  return true;
}

SearchOptions decode(int top_k = 10) {
  SearchOptions o;
  o.phase = Phase::Decode;
  o.top_k = top_k;
  return o;
}

TEST(PlacementAwareSearch, KunpengShipsItsClustersAsALatentGroup) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  ASSERT_TRUE(k.params);
  EXPECT_EQ(k.params->latent_group, (LatentGroupParams{.cores = 4, .stride = 1, .bw_gbs = 20}));
}

TEST(PlacementAwareSearch, KunpengDecodeSpreadsOverTheLatentGroupsBecauseOfTheirContention) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  const engine::ModelConfig model = engine::load_preset("llama-1.3b");
  LatencySimulator sim(k.tree, *k.params, model, small_trace(), batch(1));
  const PlacementAwareResult r = search_configs_placement_aware(k.tree, model, sim, decode(),
                                                                k.params->latent_group, kUnbounded);
  EXPECT_TRUE(r.placement);
  EXPECT_NE(r.note.find("decode search: placement hash for the latent groups of 4 cores"),
            std::string::npos)
      << r.note;
  ASSERT_FALSE(r.result.ranked.empty());
  const topotree::ServiceConfig& best = r.result.ranked[0].config;
  // Every other core: each rank's cores strided over the clusters, two of each cluster busy.
  EXPECT_FALSE(contiguous(best)) << best.to_string();
  EXPECT_EQ(sim.busiest_latent_group(best), 2) << best.to_string();
  // The same cores counted contiguously (8 x 12, the first half of each die) fill whole
  // clusters, and predict slower.
  const topotree::ServiceConfig packed =
      topotree::cut(topotree::apply_remove(k.tree, {.n = 12, .depth = 3}), 2);
  ASSERT_TRUE(contiguous(packed));
  EXPECT_EQ(sim.busiest_latent_group(packed), 4);
  EXPECT_LT(r.result.ranked[0].prediction.ms, sim.evaluate(packed, Phase::Decode).ms);

  // The same machine without the contention term: no reason to spread, and the contiguous
  // cores come first.
  MachineParams neutral = *k.params;
  neutral.latent_group = {};
  LatencySimulator flat(k.tree, neutral, model, small_trace(), batch(1));
  const PlacementAwareResult f = search_configs_placement_aware(k.tree, model, flat, decode(),
                                                                neutral.latent_group, kUnbounded);
  EXPECT_FALSE(f.placement);
  EXPECT_TRUE(contiguous(f.result.ranked.at(0).config)) << f.result.ranked[0].config.to_string();
}

TEST(PlacementAwareSearch, WithoutALatentGroupItIsTheStructureSearch) {
  const MachineDescription m = load_machine("xeon-gold-6230-2s");
  ASSERT_FALSE(m.params->latent_group.active());
  const engine::ModelConfig model = engine::load_preset("llama-1.3b");
  LatencySimulator sim(m.tree, *m.params, model, small_trace());
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    SearchOptions o = decode();
    o.phase = ph;
    const SearchResult plain = search_configs(m.tree, model, sim, o);
    const PlacementAwareResult r = search_configs_placement_aware(
        m.tree, model, sim, o, m.params->latent_group, kStartupPlacementBound);
    EXPECT_FALSE(r.placement);
    EXPECT_EQ(r.note, "");
    EXPECT_EQ(r.result.stats.trees.explored(), plain.stats.trees.explored());
    ASSERT_EQ(r.result.ranked.size(), plain.ranked.size());
    for (size_t i = 0; i < plain.ranked.size(); ++i) {
      EXPECT_EQ(r.result.ranked[i].config, plain.ranked[i].config) << phase_name(ph) << i;
      EXPECT_DOUBLE_EQ(r.result.ranked[i].prediction.ms, plain.ranked[i].prediction.ms);
    }
  }
}

TEST(PlacementAwareSearch, NeverWorseThanTheStructureSearch) {
  // Alone, the placement search's early stopping leaves the 8272CL's best decode group before
  // reaching it (2x22 at 12.87 ms against the structure hash's 2x20 at 12.80): merged, it stays.
  const MachineDescription m = load_machine("xeon-platinum-8272cl-2s");
  const engine::ModelConfig model = engine::load_preset("llama-1.3b");
  MachineParams p = *m.params;
  p.latent_group = {.cores = 2, .stride = 1, .bw_gbs = 1e6};  // never binds
  LatencySimulator sim(m.tree, p, model, small_trace());
  const SearchResult structure = search_configs(m.tree, model, sim, decode());
  const PlacementAwareResult r =
      search_configs_placement_aware(m.tree, model, sim, decode(), p.latent_group, kUnbounded);
  EXPECT_TRUE(r.placement);
  EXPECT_LE(r.result.ranked.at(0).prediction.ms, structure.ranked.at(0).prediction.ms);
  // Each configuration once, whatever the order of its ranks and CPUs.
  for (size_t i = 0; i < r.result.ranked.size(); ++i)
    for (size_t j = i + 1; j < r.result.ranked.size(); ++j)
      EXPECT_FALSE(r.result.ranked[i].config.canonical() == r.result.ranked[j].config.canonical());
}

TEST(PlacementAwareSearch, PastItsBoundTheStructureHashStandsWithANote) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  const engine::ModelConfig model = engine::load_preset("llama-1.3b");
  LatencySimulator sim(k.tree, *k.params, model, small_trace(), batch(16));
  const SearchResult structure = search_configs(k.tree, model, sim, decode());
  const PlacementAwareResult r = search_configs_placement_aware(
      k.tree, model, sim, decode(), k.params->latent_group, PlacementBound{.max_trees = 50});
  EXPECT_FALSE(r.placement);
  EXPECT_NE(r.note.find("passed its bound of 50 trees, so the structure hash's 334 trees stand"),
            std::string::npos)
      << r.note;
  ASSERT_EQ(r.result.ranked.size(), structure.ranked.size());
  for (size_t i = 0; i < structure.ranked.size(); ++i)
    EXPECT_EQ(r.result.ranked[i].config, structure.ranked[i].config);
  // The time limit likewise.
  const PlacementAwareResult t =
      search_configs_placement_aware(k.tree, model, sim, decode(), k.params->latent_group,
                                     PlacementBound{.max_trees = 1000000, .max_seconds = 1e-9});
  EXPECT_FALSE(t.placement);
  EXPECT_NE(t.note.find("passed its bound"), std::string::npos) << t.note;
  // An explicit placement hash is searched as asked, unbounded and alone.
  SearchOptions o = decode();
  o.hash = topotree::HashMode::Placement;
  const PlacementAwareResult e = search_configs_placement_aware(
      k.tree, model, sim, o, k.params->latent_group, PlacementBound{.max_trees = 50});
  EXPECT_TRUE(e.placement);
  EXPECT_FALSE(e.result.stats.trees.truncated);
  EXPECT_EQ(e.note, "");
}

TEST(PlacementAwareSearch, SandwichdsStartupSearchUsesIt) {
  const MachineDescription k = load_machine("kunpeng920-4s");
  const engine::ModelConfig model = engine::load_preset("llama-1.3b");
  const StartupConfigs c =
      startup_configs(k.tree, *k.params, model, small_trace(), batch(16), {}, kUnbounded);
  EXPECT_NE(c.search_note.find("prefill search: placement hash"), std::string::npos)
      << c.search_note;
  EXPECT_NE(c.search_note.find("decode search: placement hash"), std::string::npos)
      << c.search_note;
  EXPECT_EQ(c.decode.rank_count(), 8);
  // Its bound: past it, the structure hash, and the start-up line says so.
  const StartupConfigs b = startup_configs(k.tree, *k.params, model, small_trace(), batch(1), {},
                                           PlacementBound{.max_trees = 50});
  EXPECT_NE(b.search_note.find("passed its bound of 50 trees"), std::string::npos) << b.search_note;
  // Without a latent group: no note, as before.
  MachineParams neutral = *k.params;
  neutral.latent_group = {};
  EXPECT_EQ(startup_configs(k.tree, neutral, model, small_trace(), batch(1)).search_note, "");
}

}  // namespace
}  // namespace sandwich::tuner
