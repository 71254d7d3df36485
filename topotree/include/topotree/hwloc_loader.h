#pragma once
// The fundamental TopoTree of a machine, read with hwloc: this machine, an hwloc synthetic
// description ("pack:2 [numa] l3:16 l2:4 core:1 pu:2") or an hwloc XML file (lstopo file.xml).
//
// Levels where every node has a single child are merged into one ("L2+L1d+Core+PU"): they add
// no choice to a cut. An asymmetric machine (a package with fewer cores, hybrid cores) is cut
// down to its largest symmetric part, and a note says what was left out.
#include <cstdint>
#include <string>
#include <vector>

#include "topotree/topo_tree.h"

namespace sandwich::topotree {

struct LoadedTopology {
  TopoTree tree;
  std::string source;              // "this machine", "synthetic: ...", "XML: file.xml"
  std::vector<std::string> notes;  // things a user should know (asymmetry, missing NUMA info)
  // Every PU hwloc reported (the tree may hold only the symmetric part), ascending by OS index,
  // and the NUMA node of each: what a user may name in a service configuration.
  std::vector<int> all_cpus, all_cpus_numa;
  // Memory of all NUMA nodes together (hwloc's total; a synthetic description's memory=
  // attributes), 0 when hwloc does not know it.
  uint64_t memory_bytes = 0;
  // The distinct NUMA nodes of all_cpus, ascending.
  std::vector<int> numa_nodes() const;
};

// Most PUs a synthetic description may have: far above real machines (a few thousand PUs).
constexpr uint64_t kMaxPus = 65536;

// spec: "" = this machine; an existing file = hwloc XML; anything else = a synthetic
// description. Throws std::invalid_argument with hwloc's complaint and an example if the
// description is not valid, or if it has more than kMaxPus PUs.
LoadedTopology load_topology(const std::string& spec);

// This machine's topology (the CPUs this process may use), read once.
const LoadedTopology& this_machine();

}  // namespace sandwich::topotree
