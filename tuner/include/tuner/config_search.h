#pragma once
// Service-configuration search: explore the transformation tree of a machine's TopoTree, cut
// every tree into configurations, keep those the model can be sharded over, rank them with an
// evaluator and return the best.
//
// Prefill candidates come from trees that keep every core (group transforms only); decode
// candidates from those and every tree after remove transforms (fewer cores, less contention),
// where a remove that does not improve the best decode figure prunes its descendants.
//
// Early stopping: configurations with the same rank count and NUMA placement form a group
// (they differ only in cores per rank). A group is evaluated in the search's order; each
// evaluation worse than the group's best costs one unit of patience (a tie costs nothing), an
// improvement restores it, and a group out of patience stops: its remaining configurations are
// discarded unevaluated.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/formats/model_config.h"
#include "topotree/merkle_hash.h"
#include "topotree/service_config.h"
#include "topotree/transform_tree.h"
#include "tuner/evaluator.h"

namespace sandwich::tuner {

struct SearchOptions {
  Phase phase = Phase::Decode;
  int top_k = 10;
  int patience = 8;         // 0: no early stopping
  bool numa_local = false;  // only ranks whose CPUs share one NUMA node
  // Beyond dividing the heads: whether the model's weights split over this many ranks (a
  // quantized model's shards must hold whole blocks; engine's check_rank_count). Unset: any.
  std::function<bool(int ranks)> ranks_fit;
  topotree::HashMode hash = topotree::HashMode::Structure;
  int max_group_levels = 6;
  int64_t max_trees = 200000;
  double max_seconds = 0;  // the tree exploration's wall time at most; 0: no limit
};

struct RankedConfig {
  topotree::ServiceConfig config;
  Prediction prediction;   // the searched phase
  Prediction other_phase;  // the other phase when the evaluator is cheap (else ms = inf)
  std::string origin;      // "group(4,1,3) remove(1,4), cut at Group"
};

struct SearchStats {
  topotree::ExploreStats trees;
  int64_t configs_cut = 0;            // cuts made (one per level per tree)
  int64_t configs_deduplicated = 0;   // cuts equal to a configuration already seen
  int64_t configs_filtered = 0;       // distinct configurations the model cannot use
  int64_t configs_early_stopped = 0;  // distinct configurations skipped by early stopping
  int64_t configs_evaluated = 0;
  int64_t groups = 0, groups_stopped = 0;
  double seconds = 0;
};

struct SearchResult {
  Phase phase = Phase::Decode;
  std::vector<RankedConfig> ranked;  // best first, at most top_k
  SearchStats stats;
  std::string evaluator;
};

// Tensor parallelism splits query heads and KV heads evenly over the ranks.
bool heads_divisible(const engine::ModelConfig& model, int ranks);

// Throws std::invalid_argument if no configuration passes the filters (naming the rank counts
// the topology offers and the model's head counts).
SearchResult search_configs(const topotree::TopoTree& machine, const engine::ModelConfig& model,
                            ConfigEvaluator& evaluator, const SearchOptions& options);

}  // namespace sandwich::tuner
