// From hwloc's object tree to a TopoTree: keep the largest symmetric part, merge levels of
// single children.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "raw_tree.h"

namespace sandwich::topotree::detail {
namespace {

int64_t leaf_count(const RawNode& n) {
  if (n.children.empty()) return 1;
  int64_t s = 0;
  for (const auto& c : n.children) s += leaf_count(c);
  return s;
}

// The chain of types from the node down to its first leaf: nodes of the same shape can stand
// side by side in a symmetric tree once their child counts are evened out.
std::string shape(const RawNode& n) {
  std::string s = n.type;
  for (const RawNode* p = &n; !p->children.empty(); p = &p->children[0])
    s += "/" + p->children[0].type;
  return s;
}

// Bottom-up: among children of different shapes keep those of the shape with the most PUs
// (hybrid cores, a socket described differently).
void keep_one_shape(RawNode& n, std::set<std::string>& dropped) {
  for (auto& c : n.children) keep_one_shape(c, dropped);
  if (n.children.size() < 2) return;
  std::map<std::string, int64_t> pus;
  std::vector<std::string> order;
  for (const auto& c : n.children) {
    const std::string s = shape(c);
    if (!pus.count(s)) order.push_back(s);
    pus[s] += leaf_count(c);
  }
  if (pus.size() == 1) return;
  std::string best = order[0];
  for (const auto& s : order)
    if (pus[s] > pus[best]) best = s;
  std::vector<RawNode> kept;
  for (auto& c : n.children) {
    if (shape(c) == best) {
      kept.push_back(std::move(c));
    } else {
      dropped.insert(c.type + " (" + std::to_string(leaf_count(c)) +
                     " PUs, a different structure)");
    }
  }
  n.children = std::move(kept);
}

// Top-down: every node of a depth keeps as many children as the poorest one has.
void even_out_arity(RawNode& root, std::set<std::string>& trimmed) {
  std::vector<RawNode*> level{&root};
  while (!level.empty() && !level[0]->children.empty()) {
    size_t m = level[0]->children.size();
    for (RawNode* n : level) m = std::min(m, n->children.size());
    std::vector<RawNode*> next;
    for (RawNode* n : level) {
      if (n->children.size() > m) {
        trimmed.insert(n->type + " with " + std::to_string(n->children.size()) + " " +
                       n->children[0].type + " children cut to " + std::to_string(m));
        n->children.resize(m);
      }
      for (auto& c : n->children) next.push_back(&c);
    }
    level = std::move(next);
  }
}

}  // namespace

TopoTree raw_to_topo_tree(RawNode root, std::vector<std::string>& notes) {
  const int64_t before = leaf_count(root);
  std::set<std::string> dropped, trimmed;
  keep_one_shape(root, dropped);
  even_out_arity(root, trimmed);
  const int64_t after = leaf_count(root);
  if (after != before || !dropped.empty() || !trimmed.empty()) {
    std::string why;
    for (const auto& d : dropped) why += (why.empty() ? "" : "; ") + std::string("dropped ") + d;
    for (const auto& t : trimmed) why += (why.empty() ? "" : "; ") + t;
    notes.push_back("asymmetric machine: using its largest symmetric part, " +
                    std::to_string(after) + " of " + std::to_string(before) + " PUs (" + why + ")");
  }

  // Levels, read off the (now symmetric) tree depth by depth.
  std::vector<Level> levels;
  std::vector<const RawNode*> nodes{&root};
  levels.push_back({.label = root.type,
                    .arity = 1,
                    .numa_memory = root.numa_memory,
                    .cache_bytes = root.cache_bytes});
  while (!nodes[0]->children.empty()) {
    std::vector<const RawNode*> next;
    for (const RawNode* n : nodes)
      for (const auto& c : n->children) next.push_back(&c);
    const RawNode& f = *next[0];
    bool numa = false;
    for (const RawNode* n : next) numa = numa || n->numa_memory;
    levels.push_back({.label = f.type,
                      .arity = static_cast<int>(nodes[0]->children.size()),
                      .numa_memory = numa,
                      .cache_bytes = f.cache_bytes});
    nodes = std::move(next);
  }
  std::vector<int> cpus, numa;
  for (const RawNode* leaf : nodes) {
    if (leaf->cpu < 0)
      throw std::invalid_argument("the topology's level '" + leaf->type +
                                  "' holds no PU; a TopoTree needs PUs as leaves");
    cpus.push_back(leaf->cpu);
    numa.push_back(leaf->numa);
  }
  if (cpus.empty()) throw std::invalid_argument("the topology has no PU");

  // A level of single children adds nothing to a cut: fold it into the level above.
  std::vector<Level> merged{levels[0]};
  for (size_t d = 1; d < levels.size(); ++d) {
    if (levels[d].arity == 1) {
      Level& up = merged.back();
      up.label += "+" + levels[d].label;
      up.numa_memory = up.numa_memory || levels[d].numa_memory;
      up.cache_bytes = std::max(up.cache_bytes, levels[d].cache_bytes);
    } else {
      merged.push_back(levels[d]);
    }
  }
  return TopoTree(std::move(merged), std::move(cpus), std::move(numa));
}

}  // namespace sandwich::topotree::detail
