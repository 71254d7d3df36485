#pragma once
// Service configurations: how a phase runs — how many rank processes, each on which CPUs, its
// memory on which NUMA node. sandwich-config makes them by cutting a TopoTree horizontally: each
// node on the cut becomes one rank, its subtree's PUs its threads. Users give them as "RxT" or
// JSON; a plan holds one for prefill and one for decode.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "topotree/hwloc_loader.h"
#include "topotree/topo_tree.h"

namespace sandwich::topotree {

struct Rank {
  int numa = -1;                // its memory's NUMA node; -1: its CPUs span several (see below)
  std::vector<int> numa_nodes;  // the distinct NUMA nodes of its CPUs, ascending
  std::vector<int> cpus;        // one thread per CPU (OS PU index)

  // Where its memory is bound: its own node, or the first of those its CPUs span.
  int memory_node() const { return numa >= 0 ? numa : numa_nodes.empty() ? 0 : numa_nodes[0]; }
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

  // Same ranks on the same CPUs and nodes (how it was made is not compared).
  bool operator==(const ServiceConfig& o) const { return ranks == o.ranks; }
  uint64_t key() const;  // hash of the ranks' CPU lists, for deduplication
  // The same ranks with each one's CPUs ascending and the ranks in order of their CPUs: what a
  // model of the machine sees (cuts of trees that list the same PUs in another order).
  ServiceConfig canonical() const;
  void canonicalize();  // in place

  // How ranks sit on NUMA nodes, e.g. "8 ranks: 1 on each of NUMA 0-7"; configs with the same
  // rank count and placement differ only in how many cores each rank uses.
  std::string placement() const;
  // "8x18 [0-17] [24-41] ..." (at most `max_ranks` rank lists, then an ellipsis).
  std::string to_string(int max_ranks = 4) const;
  // {"ranks": [{"numa": N, "cpus": [...]}, ...]}, with "numa_nodes" for a rank that spans several.
  nlohmann::json to_json() const;
};

ServiceConfig cut(const TopoTree& tree, int depth);
// One config per depth, root (one rank) to leaves (one rank per PU).
std::vector<ServiceConfig> all_cuts(const TopoTree& tree);

// "RxT" (R ranks of T consecutive CPUs of the machine) or the JSON form of to_json() (a rank's
// "cpus" may also be a CPU list such as "0-3,8"; a rank without "numa" gets its CPUs' node). Checks
// that the CPUs and NUMA nodes exist on the machine and that no CPU is given twice; throws
// std::invalid_argument with the reason.
ServiceConfig parse_service_config(const std::string& text,
                                   const LoadedTopology& machine = this_machine());
ServiceConfig service_config_from_json(const nlohmann::json& j,
                                       const LoadedTopology& machine = this_machine());

}  // namespace sandwich::topotree
