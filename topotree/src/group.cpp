// group(n, t, d): a new level of virtual nodes above depth d.
#include <stdexcept>

#include "topotree/transforms.h"
#include "transformed_tree.h"

namespace sandwich::topotree {

std::string GroupSpec::to_string() const {
  return "group(" + std::to_string(n) + "," + std::to_string(t) + "," + std::to_string(depth) + ")";
}

namespace {

void check_group(const TopoTree& tree, const GroupSpec& g) {
  detail::check_transform_depth(tree, g.depth, g.to_string());
  const std::string what = g.to_string() + ": ";
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
  std::vector<int64_t> leaves;
  leaves.reserve(static_cast<size_t>(tree.leaf_count()));
  // Children of one parent, reordered so that each group's members are adjacent.
  for (int64_t p = 0; p < parents; ++p) {
    for (int b = 0; b < a / (n * t); ++b) {
      for (int j = 0; j < t; ++j) {
        for (int k = 0; k < n; ++k) {
          const int64_t child = p * a + b * n * t + j + k * t;
          for (int64_t l = child * s; l < (child + 1) * s; ++l) leaves.push_back(l);
        }
      }
    }
  }
  std::vector<Level> levels = tree.levels();
  Level group{.label = "Group", .arity = a / n, .virtual_group = true};
  levels[static_cast<size_t>(d)].arity = n;
  levels.insert(levels.begin() + d, group);
  return detail::transformed_tree(tree, std::move(levels), leaves, g.to_string());
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

}  // namespace sandwich::topotree
