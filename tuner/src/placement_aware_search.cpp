#include "tuner/placement_aware_search.h"

#include <algorithm>
#include <cstdio>

namespace sandwich::tuner {
namespace {

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f s", s);
  return b;
}

// Both rankings as one: each configuration once (whatever the order of its ranks and CPUs),
// best first, at most top_k.
std::vector<RankedConfig> merged(const std::vector<RankedConfig>& a,
                                 const std::vector<RankedConfig>& b, int top_k) {
  std::vector<RankedConfig> all = a;
  for (const RankedConfig& rc : b)
    if (std::none_of(all.begin(), all.end(), [&](const RankedConfig& x) {
          return x.config.canonical() == rc.config.canonical();
        }))
      all.push_back(rc);
  std::stable_sort(all.begin(), all.end(), [](const RankedConfig& x, const RankedConfig& y) {
    return x.prediction.ms < y.prediction.ms;
  });
  if (static_cast<int>(all.size()) > top_k) all.resize(static_cast<size_t>(top_k));
  return all;
}

}  // namespace

PlacementAwareResult search_configs_placement_aware(
    const topotree::TopoTree& machine, const engine::ModelConfig& model, ConfigEvaluator& evaluator,
    const SearchOptions& options, const LatentGroupParams& latent, const PlacementBound& bound) {
  PlacementAwareResult out;
  if (options.hash == topotree::HashMode::Placement || !latent.active()) {
    out.result = search_configs(machine, model, evaluator, options);
    out.placement = options.hash == topotree::HashMode::Placement;
    return out;
  }
  const std::string phase = phase_name(options.phase);
  SearchOptions so = options;
  so.hash = topotree::HashMode::Structure;
  const SearchResult structure = search_configs(machine, model, evaluator, so);
  so.hash = topotree::HashMode::Placement;
  so.max_trees =
      bound.max_trees > 0 ? std::min(options.max_trees, bound.max_trees) : options.max_trees;
  so.max_seconds = bound.max_seconds;
  SearchResult placement;
  try {
    placement = search_configs(machine, model, evaluator, so);
  } catch (const std::invalid_argument&) {
    placement.stats.trees.truncated = true;  // stopped before any usable configuration
  }
  if (placement.stats.trees.truncated) {
    out.result = structure;
    out.result.stats.seconds += placement.stats.seconds;
    out.note = phase + " search: the placement hash (latent " + latent.describe() +
               ") passed its bound of " + std::to_string(so.max_trees) + " trees" +
               (bound.max_seconds > 0 ? " or " + seconds_text(bound.max_seconds) : "") +
               ", so the structure hash's " + std::to_string(structure.stats.trees.explored()) +
               " trees stand (strided and contiguous groupings not told apart)";
    return out;
  }
  out.placement = true;
  out.result = placement;
  out.result.ranked = merged(placement.ranked, structure.ranked, options.top_k);
  out.result.stats.seconds = structure.stats.seconds + placement.stats.seconds;
  out.note = phase + " search: placement hash for the latent " + latent.describe() + ", " +
             std::to_string(placement.stats.trees.explored()) +
             " trees (structure hash: " + std::to_string(structure.stats.trees.explored()) +
             ") in " + seconds_text(out.result.stats.seconds);
  return out;
}

}  // namespace sandwich::tuner
