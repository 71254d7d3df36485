#pragma once
// `sandwich-tune topology`: a machine's TopoTree as a level table and a tree, or for Graphviz.
#include <string>

namespace sandwich::tuner {

struct TopologyRequest {
  std::string topology;  // "" : this machine (see load_machine)
  std::string dot;       // also the Graphviz graph: "-" instead of the text, else into this file
  bool full = false;     // every node (else two of each run of identical siblings)
};

// What the command prints. Writes the dot file first; throws std::runtime_error when it cannot.
std::string topology_report(const TopologyRequest& r);

}  // namespace sandwich::tuner
