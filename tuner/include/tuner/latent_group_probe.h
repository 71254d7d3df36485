#pragma once
// Finding a shared resource the OS does not show (the paper's Figure 3a: a Kunpeng 920's 4-core
// clusters share an L3 tag that hwloc's tree lacks). Each candidate is a grouping of the cores
// under one parent of the core level, as group(n, t, core depth) would invent it: consecutive
// (t = 1) or interleaved over the whole parent (n t = its cores). The same number of cores
// stream together twice: packed into one candidate group, and spread evenly over the groups.
// Both sets sit under the same parent and NUMA node, so only a resource of the group can make
// packing cost; the grouping it costs most is the machine's latent group, and what its packed
// cores drew together is the group's capacity.
#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "topotree/topo_tree.h"
#include "tuner/machine_params.h"

namespace sandwich::tuner {

struct LatentGroupProbe {
  int cores = 0, stride = 1;              // the candidate: group(cores, stride, core depth)
  std::vector<int> packed, spread;        // CPUs streaming (one PU per core)
  double packed_gbs = 0, spread_gbs = 0;  // their read bandwidth together; 0: not measured

  nlohmann::json to_json() const;
  static LatentGroupProbe from_json(const nlohmann::json& j);
};

// Packing must lose more than this fraction of the spread bandwidth to count: bandwidth probes on
// a shared machine differ by a few percent from run to run.
inline constexpr double kLatentGroupMinLoss = 0.1;

// The candidates of the first parent of the core level whose cores all sit on the first NUMA node,
// unmeasured; none when that parent has fewer than 3 cores (no group transform applies) or a
// candidate needs more than max_threads cores (0: no limit).
std::vector<LatentGroupProbe> latent_group_candidates(const topotree::TopoTree& local,
                                                      int max_threads = 0);

// Measures packed_gbs and spread_gbs of each candidate (bytes_per_thread streamed by each core).
void measure_latent_groups(std::vector<LatentGroupProbe>& probes, size_t bytes_per_thread);

// The latent group the measurements show, or none (neutral) when no candidate loses more than
// kLatentGroupMinLoss by packing. Pure: a function of the measured numbers only.
LatentGroupParams latent_group_from_probes(const std::vector<LatentGroupProbe>& probes);

}  // namespace sandwich::tuner
