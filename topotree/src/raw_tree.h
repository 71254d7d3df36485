#pragma once
// The machine as hwloc describes it, one node per object, before it is made symmetric and
// merged into a TopoTree's levels.
#include <cstdint>
#include <string>
#include <vector>

#include "topotree/topo_tree.h"

namespace sandwich::topotree::detail {

struct RawNode {
  std::string type;          // "Package", "L3", "Core", "PU", "Cluster", ...
  uint64_t cache_bytes = 0;  // for caches
  bool numa_memory = false;  // a NUMA node's memory is attached here
  int cpu = -1;              // OS index, for PUs (the leaves)
  int numa = -1;             // NUMA node, for PUs
  std::vector<RawNode> children;
};

// Cuts the tree down to its largest symmetric part (notes say what was dropped), merges levels
// of single children and returns the TopoTree. Throws if no PU is left.
TopoTree raw_to_topo_tree(RawNode root, std::vector<std::string>& notes);

}  // namespace sandwich::topotree::detail
