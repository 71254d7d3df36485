#pragma once
// What `--topology` names: nothing (this machine), a shipped topology (configs/topologies/
// <name>.json: an hwloc synthetic string or XML file plus the machine's published speeds), a
// descriptor file, an hwloc XML file or an hwloc synthetic string. A descriptor may describe a
// cluster: {"cluster": {"nodes": N, "node": NAME or an inline descriptor, "link": {...}}}; the
// description is then its node's, with `cluster` saying how many and how they are joined.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "topotree/topo_tree.h"
#include "tuner/cluster.h"
#include "tuner/machine_params.h"

namespace sandwich::tuner {

struct MachineDescription {
  std::string name;         // the shipped name, "this machine", or the spec as given
  std::string description;  // one line for people
  topotree::TopoTree tree;
  std::string source;                   // how hwloc read it
  std::vector<std::string> notes;       // asymmetry and the like
  std::optional<MachineParams> params;  // from a descriptor; none for raw hwloc input
  bool local = false;                   // this machine: calibration and measurement apply
  uint64_t memory_bytes = 0;            // of one machine (node); 0 when not known
  std::optional<Cluster> cluster;       // several such machines joined by a link
};

// Throws std::invalid_argument with a one-line reason (and the shipped names) on bad input.
MachineDescription load_machine(const std::string& spec);

std::filesystem::path topologies_dir();  // configs/topologies under the engine's configs_dir()
std::vector<std::string> shipped_topology_names();

}  // namespace sandwich::tuner
