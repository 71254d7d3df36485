#include "tuner/commands/topology_command.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "topotree/tree_render.h"
#include "tuner/machine_description.h"

namespace sandwich::tuner {

std::string topology_report(const TopologyRequest& r) {
  const MachineDescription m = load_machine(r.topology);
  std::ostringstream os;
  os << "topology  " << m.name;
  if (!m.description.empty() && m.description != m.name) os << ": " << m.description;
  os << "\nsource    " << m.source << "\n";
  os << "PUs       " << m.tree.leaf_count() << " in " << m.tree.numa_count() << " NUMA node"
     << (m.tree.numa_count() == 1 ? "" : "s") << "\n";
  if (m.cluster)
    os << "nodes     " << m.cluster->nodes << " such machines (the level above the tree below), "
       << "joined by " << m.cluster->link.describe() << "\n";
  if (m.memory_bytes > 0)
    os << "memory    " << m.memory_bytes / (1ull << 20) << " MiB per machine\n";
  for (const auto& n : m.notes) os << "note      " << n << "\n";
  os << "\n"
     << topotree::level_table(m.tree) << "\n"
     << topotree::text_tree(m.tree, r.full ? 0 : 2);
  if (!r.dot.empty()) {
    const std::string graph = topotree::dot_graph(m.tree, m.name);
    if (r.dot == "-") return graph;
    std::ofstream out(r.dot);
    if (!out || !(out << graph)) throw std::runtime_error("cannot write " + r.dot);
    os << "\nwrote " << r.dot << " (render with: dot -Tsvg " << r.dot << " -o tree.svg)\n";
  }
  return os.str();
}

}  // namespace sandwich::tuner
