#pragma once
// The service-configuration search on a machine with a latent group (MachineParams::
// latent_group, found by calibration or given by a topology descriptor). The structure hash
// merges a strided grouping of cores with the contiguous one before they are evaluated, yet the
// simulator charges the latent group's contention, so on such a machine they differ: there the
// search also runs with the placement hash, which keeps them apart (the paper's Kunpeng
// "every other core" placements), within a bound on its size. Past the bound the structure
// search's result stands and a note says so. Without a latent group, or with a hash chosen by
// the caller, it is search_configs as given.
#include <cstdint>
#include <string>

#include "tuner/config_search.h"
#include "tuner/machine_params.h"

namespace sandwich::tuner {

// Per search (one phase): distinct trees explored, and wall time (0: none; tests, whose results
// must not depend on the machine's load). Past either, the placement search is abandoned.
struct PlacementBound {
  int64_t max_trees = 0;
  double max_seconds = 0;
};
// sandwichd's start-up search, kept well under a second: the shipped topologies' placement
// searches take 34-6,744 trees (a fraction of a second) except Kunpeng 920 (4 sockets) decode
// at batch 1, 14,934 trees, which falls back to the structure hash after 5,000.
inline constexpr PlacementBound kStartupPlacementBound{5000, 0.5};
// sandwich-tune plan and configs, offline: every shipped topology's placement search fits.
inline constexpr PlacementBound kTunerPlacementBound{50000, 10};

struct PlacementAwareResult {
  SearchResult result;
  bool placement = false;  // the placement hash's trees were searched
  std::string note;        // how it searched, for reports; "" when the options were kept as given
};

// `options.hash` Placement (an explicit request) is searched as given, unbounded. Otherwise,
// with an active latent group: the structure search, then the placement search within `bound`;
// the ranking merges both (the placement search's early stopping can leave a group before a
// configuration the structure search reached), and the stats are the placement search's with
// both searches' seconds.
PlacementAwareResult search_configs_placement_aware(
    const topotree::TopoTree& machine, const engine::ModelConfig& model, ConfigEvaluator& evaluator,
    const SearchOptions& options, const LatentGroupParams& latent, const PlacementBound& bound);

}  // namespace sandwich::tuner
