// group(n, t, d): a new level of virtual nodes above depth d.
#include <stdexcept>

#include "topotree/transforms.h"

namespace sandwich::topo {

std::string GroupSpec::to_string() const {
  return "group(" + std::to_string(n) + "," + std::to_string(t) + "," + std::to_string(depth) + ")";
}

namespace {

void check_group(const TopoTree& tree, const GroupSpec& g) {
  const std::string what = g.to_string() + ": ";
  if (g.depth < 1 || g.depth > tree.leaf_depth())
    throw std::invalid_argument(what + "depth must be in 1.." + std::to_string(tree.leaf_depth()));
  const int a = tree.level(g.depth).arity;
  if (g.n < 2) throw std::invalid_argument(what + "a group needs at least 2 nodes");
  if (g.n >= a)
    throw std::invalid_argument(what + "nodes of depth " + std::to_string(g.depth) + " come " +
                                std::to_string(a) + " per parent; a group must take fewer");
  if (g.t < 1) throw std::invalid_argument(what + "the stride must be at least 1");
  if (a % (g.n * g.t) != 0)
    throw std::invalid_argument(what + "n*t = " + std::to_string(g.n * g.t) +
                                " does not divide the " + std::to_string(a) +
                                " nodes per parent, so the groups would not tile them");
}

}  // namespace

TopoTree apply_group(const TopoTree& tree, const GroupSpec& g) {
  check_group(tree, g);
  const int d = g.depth, a = tree.level(d).arity, n = g.n, t = g.t;
  const int64_t s = tree.leaves_per_node(d), parents = tree.nodes_at(d - 1);
  const auto src = tree.cpus();
  const auto src_numa = tree.leaf_numa();
  std::vector<int> cpus, numa;
  cpus.reserve(src.size());
  numa.reserve(src.size());
  // Children of one parent, reordered so that each group's members are adjacent.
  for (int64_t p = 0; p < parents; ++p) {
    for (int b = 0; b < a / (n * t); ++b) {
      for (int j = 0; j < t; ++j) {
        for (int k = 0; k < n; ++k) {
          const int64_t child = p * a + b * n * t + j + k * t;
          for (int64_t l = child * s; l < (child + 1) * s; ++l) {
            cpus.push_back(src[static_cast<size_t>(l)]);
            numa.push_back(src_numa[static_cast<size_t>(l)]);
          }
        }
      }
    }
  }
  std::vector<Level> levels = tree.levels();
  Level group{.label = "Group", .arity = a / n, .virtual_group = true};
  levels[static_cast<size_t>(d)].arity = n;
  levels.insert(levels.begin() + d, group);
  TopoTree out(std::move(levels), std::move(cpus), std::move(numa));
  for (const auto& h : tree.history()) out.add_history(h);
  out.add_history(g.to_string());
  return out;
}

std::vector<GroupSpec> valid_groups(const TopoTree& tree) {
  std::vector<GroupSpec> out;
  for (int d = 1; d <= tree.leaf_depth(); ++d) {
    const int a = tree.level(d).arity;
    for (int n = 2; n < a; ++n) {
      if (a % n != 0) continue;
      for (int t = 1; n * t <= a; ++t)
        if (a % (n * t) == 0) out.push_back({n, t, d});
    }
  }
  return out;
}

}  // namespace sandwich::topo
