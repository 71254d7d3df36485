#include "topotree/tree_render.h"

#include <iomanip>
#include <sstream>

#include "common/cpu_list.h"

namespace sandwich::topotree {
namespace {

std::string level_name(const Level& l) {
  std::string s = l.label;
  if (l.cache_bytes) s += " (" + format_bytes(l.cache_bytes) + ")";
  return s;
}

std::string numa_text(const TopoTree& t, int d, int64_t i) {
  const int n = t.node_numa(d, i);
  if (n >= 0) return "NUMA " + std::to_string(n);
  return "NUMA " + format_cpu_list(t.node_numa_nodes(d, i));
}

void print_node(const TopoTree& t, int d, int64_t i, int expand, int indent,
                std::ostringstream& os) {
  const Level& l = t.level(d);
  os << std::string(static_cast<size_t>(indent) * 2, ' ') << level_name(l) << " #" << i;
  if (l.numa_memory || d == 0 || t.node_numa(d, i) < 0) os << " [" << numa_text(t, d, i) << "]";
  if (d == t.leaf_depth()) {
    os << " PU " << t.node_cpus(d, i)[0] << "\n";
    return;
  }
  if (d + 1 == t.leaf_depth()) {
    os << ": " << t.level(d + 1).arity << " x " << level_name(t.level(d + 1)) << ", PUs "
       << format_cpu_list(t.node_cpus(d, i)) << "\n";
    return;
  }
  os << " (PUs " << format_cpu_list(t.node_cpus(d, i)) << ")\n";
  const int a = t.level(d + 1).arity;
  for (int c = 0; c < a; ++c) {
    const int64_t child = i * a + c;
    if (expand > 0 && c == expand && a > expand + 1) {
      std::vector<int> rest;
      for (int r = c; r < a; ++r) {
        const auto cpus = t.node_cpus(d + 1, i * a + r);
        rest.insert(rest.end(), cpus.begin(), cpus.end());
      }
      os << std::string(static_cast<size_t>(indent + 1) * 2, ' ') << "... " << (a - c) << " more "
         << t.level(d + 1).label << " like this (PUs " << format_cpu_list(rest) << ")\n";
      break;
    }
    print_node(t, d + 1, child, expand, indent + 1, os);
  }
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  std::ostringstream os;
  os << v << units[u];
  return os.str();
}

std::string level_table(const TopoTree& t) {
  std::ostringstream os;
  size_t w = 5;
  for (const Level& l : t.levels())
    w = std::max(w, level_name(l).size() + (l.virtual_group ? 10 : 0));
  os << "depth  " << std::left << std::setw(static_cast<int>(w)) << "level"
     << "  arity  nodes  PUs/node  NUMA/node\n";
  for (int d = 0; d <= t.leaf_depth(); ++d) {
    const Level& l = t.level(d);
    std::string name = level_name(l) + (l.virtual_group ? " [virtual]" : "");
    const int numa_nodes = static_cast<int>(t.node_numa_nodes(d, 0).size());
    os << std::left << std::setw(7) << d << std::setw(static_cast<int>(w)) << name << "  "
       << std::right << std::setw(5) << l.arity << "  " << std::setw(5) << t.nodes_at(d) << "  "
       << std::setw(8) << t.leaves_per_node(d) << "  " << std::setw(9) << numa_nodes
       << (l.numa_memory ? "  <- NUMA memory" : "") << "\n";
  }
  return os.str();
}

std::string text_tree(const TopoTree& t, int expand_siblings) {
  std::ostringstream os;
  print_node(t, 0, 0, expand_siblings, 0, os);
  return os.str();
}

std::string dot_graph(const TopoTree& t, const std::string& title) {
  std::ostringstream os;
  os << "digraph topotree {\n  rankdir=LR;\n  labelloc=t;\n  label=\"";
  for (char c : title) os << (c == '"' ? '\'' : c);
  os << "\";\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
        "fillcolor=\"#eef3fb\"];\n";
  for (int d = 0; d <= t.leaf_depth(); ++d) {
    const Level& l = t.level(d);
    for (int64_t i = 0; i < t.nodes_at(d); ++i) {
      os << "  n" << d << "_" << i << " [";
      if (d == t.leaf_depth()) {
        os << "shape=ellipse, fillcolor=\"#ffffff\", label=\"PU " << t.node_cpus(d, i)[0] << "\"";
      } else {
        os << "label=\"" << level_name(l) << " #" << i << "\\n"
           << numa_text(t, d, i) << "\\nPUs " << format_cpu_list(t.node_cpus(d, i)) << "\"";
        if (l.numa_memory) os << ", fillcolor=\"#d9ead3\"";
        if (l.virtual_group) os << ", style=\"rounded,dashed\", fillcolor=\"#ffffff\"";
      }
      os << "];\n";
      if (d > 0) os << "  n" << d - 1 << "_" << i / l.arity << " -> n" << d << "_" << i << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace sandwich::topotree
