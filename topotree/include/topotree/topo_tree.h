#pragma once
// A TopoTree: the machine as a symmetric tree whose leaves are processing units (PUs) and whose
// inner nodes are resources their descendants share (package, NUMA node, L3, cluster, core).
//
// Symmetric means every node of a level has the same number of children and the same features,
// so the tree is stored as its list of levels plus the leaves in depth-first order: node i of
// depth d owns the leaves [i * S(d), (i + 1) * S(d)), S(d) = leaves per node of depth d. Group
// transforms with a stride reorder the leaves; nothing else is needed to describe the result.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sandwich::topotree {

struct Level {
  std::string label;           // hwloc types merged into this level ("Die+L3"), or "Group"
  int arity = 1;               // children per node of the level above (1 for the root)
  bool numa_memory = false;    // a NUMA node's memory is attached to every node of this level
  bool virtual_group = false;  // inserted by a group transform: no known resource behind it
  uint64_t cache_bytes = 0;    // the largest cache merged into this level (0: none)
  bool operator==(const Level&) const = default;
};

class TopoTree {
 public:
  // levels[0] is the root (arity 1); cpus and numa hold one entry per leaf, in depth-first
  // order. Throws std::invalid_argument if the counts do not match.
  TopoTree(std::vector<Level> levels, std::vector<int> cpus, std::vector<int> numa);

  const std::vector<Level>& levels() const { return levels_; }
  const Level& level(int d) const { return levels_.at(static_cast<size_t>(d)); }
  int level_count() const { return static_cast<int>(levels_.size()); }
  int leaf_depth() const { return level_count() - 1; }

  int64_t nodes_at(int d) const { return count_.at(static_cast<size_t>(d)); }
  int64_t leaves_per_node(int d) const { return leaf_count() / nodes_at(d); }
  int64_t leaf_count() const { return static_cast<int64_t>(cpus_.size()); }

  // OS indices of the PUs, depth-first, and the NUMA node of each.
  std::span<const int> cpus() const { return cpus_; }
  std::span<const int> leaf_numa() const { return numa_; }
  std::span<const int> node_cpus(int d, int64_t i) const;
  // The NUMA node all leaves of the node belong to, or -1 if they span several.
  int node_numa(int d, int64_t i) const;
  // Distinct NUMA nodes of the node's leaves, ascending.
  std::vector<int> node_numa_nodes(int d, int64_t i) const;
  // Distinct NUMA nodes of the whole tree.
  int numa_count() const;

  // Transforms that produced this tree from the fundamental one, e.g. "group(4,1,3)".
  const std::vector<std::string>& history() const { return history_; }
  std::string history_string() const;  // "fundamental" when empty
  void add_history(std::string step) { history_.push_back(std::move(step)); }

  // Equal levels and leaves (history is not compared).
  bool same_tree(const TopoTree& o) const { return levels_ == o.levels_ && cpus_ == o.cpus_; }

 private:
  std::vector<Level> levels_;
  std::vector<int> cpus_, numa_;
  std::vector<int64_t> count_;  // nodes per depth
  std::vector<std::string> history_;
};

// The depth whose nodes are physical cores (their PUs share the core's pipelines): the leaf
// level itself when it is a core ("Core+PU"), else the deepest level labelled "Core", else the
// leaves (a machine described without cores).
int core_depth(const TopoTree& tree);

}  // namespace sandwich::topotree
