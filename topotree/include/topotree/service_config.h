#pragma once
// sandwich-config: a horizontal cut of a TopoTree is a service configuration. Each node on the
// cut becomes one rank (a process), its subtree's PUs its threads, its NUMA node where its
// memory lives.
#include <cstdint>
#include <string>
#include <vector>

#include "topotree/topo_tree.h"

namespace sandwich::topo {

struct Rank {
  int numa = -1;                // the NUMA node of all its CPUs, or -1 if they span several
  std::vector<int> numa_nodes;  // the distinct NUMA nodes of its CPUs, ascending
  std::vector<int> cpus;        // one thread per CPU (OS PU index)
  bool operator==(const Rank&) const = default;
};

struct ServiceConfig {
  std::vector<Rank> ranks;
  int cut_depth = 0;      // the depth of the cut in the tree it came from
  std::string cut_label;  // that level's label

  int rank_count() const { return static_cast<int>(ranks.size()); }
  int threads_per_rank() const {
    return ranks.empty() ? 0 : static_cast<int>(ranks[0].cpus.size());
  }
  int total_threads() const { return rank_count() * threads_per_rank(); }
  bool spans_numa() const;  // some rank uses CPUs of several NUMA nodes

  // Same ranks on the same CPUs (cut depth and label are not compared).
  bool same_ranks(const ServiceConfig& o) const { return ranks == o.ranks; }
  uint64_t key() const;  // hash of the ranks' CPU lists, for deduplication

  // How ranks sit on NUMA nodes, e.g. "8 ranks: 1 on each of NUMA 0-7"; configs with the same
  // rank count and placement differ only in how many cores each rank uses.
  std::string placement() const;
  // "8x18 [0-17] [24-41] ..." (at most `max_ranks` rank lists, then an ellipsis).
  std::string to_string(int max_ranks = 4) const;
};

ServiceConfig cut(const TopoTree& tree, int depth);
// One config per depth, root (one rank) to leaves (one rank per PU).
std::vector<ServiceConfig> all_cuts(const TopoTree& tree);

}  // namespace sandwich::topo
