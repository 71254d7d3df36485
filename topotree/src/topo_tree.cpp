#include "topotree/topo_tree.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace sandwich::topotree {

TopoTree::TopoTree(std::vector<Level> levels, std::vector<int> cpus, std::vector<int> numa)
    : levels_(std::move(levels)), cpus_(std::move(cpus)), numa_(std::move(numa)) {
  if (levels_.empty()) throw std::invalid_argument("a TopoTree needs at least one level");
  if (levels_[0].arity != 1)
    throw std::invalid_argument("the root level of a TopoTree has arity 1");
  int64_t n = 1;
  for (const Level& l : levels_) {
    if (l.arity < 1)
      throw std::invalid_argument("level '" + l.label + "' has arity " + std::to_string(l.arity));
    n *= l.arity;
    count_.push_back(n);
  }
  if (static_cast<int64_t>(cpus_.size()) != n || numa_.size() != cpus_.size())
    throw std::invalid_argument("a TopoTree with these levels has " + std::to_string(n) +
                                " leaves, got " + std::to_string(cpus_.size()) + " CPUs");
}

std::span<const int> TopoTree::node_cpus(int d, int64_t i) const {
  const int64_t s = leaves_per_node(d);
  return std::span<const int>(cpus_).subspan(static_cast<size_t>(i * s), static_cast<size_t>(s));
}

int TopoTree::node_numa(int d, int64_t i) const {
  const int64_t s = leaves_per_node(d);
  const int first = numa_[static_cast<size_t>(i * s)];
  for (int64_t k = 1; k < s; ++k)
    if (numa_[static_cast<size_t>(i * s + k)] != first) return -1;
  return first;
}

std::vector<int> TopoTree::node_numa_nodes(int d, int64_t i) const {
  const int64_t s = leaves_per_node(d);
  std::set<int> nodes(numa_.begin() + i * s, numa_.begin() + (i + 1) * s);
  return {nodes.begin(), nodes.end()};
}

int TopoTree::numa_count() const {
  return static_cast<int>(std::set<int>(numa_.begin(), numa_.end()).size());
}

std::string TopoTree::history_string() const {
  if (history_.empty()) return "fundamental";
  std::string s;
  for (const auto& h : history_) s += (s.empty() ? "" : " ") + h;
  return s;
}

int core_depth(const TopoTree& t) {
  for (int d = t.leaf_depth(); d >= 1; --d)
    if (t.level(d).label.find("Core") != std::string::npos) return d;
  return t.leaf_depth();
}

}  // namespace sandwich::topotree
