// remove(n, d): every node of depth d-1 keeps only its left-most children.
#include <stdexcept>

#include "topotree/transforms.h"
#include "transformed_tree.h"

namespace sandwich::topotree {

std::string RemoveSpec::to_string() const {
  return "remove(" + std::to_string(n) + "," + std::to_string(depth) + ")";
}

TopoTree apply_remove(const TopoTree& tree, const RemoveSpec& r) {
  detail::check_transform_depth(tree, r.depth, r.to_string());
  const std::string what = r.to_string() + ": ";
  const int d = r.depth, a = tree.level(d).arity;
  if (r.n < 1 || r.n >= a)
    throw std::invalid_argument(what + "nodes of depth " + std::to_string(d) + " have " +
                                std::to_string(a) + " children per parent; remove between 1 and " +
                                std::to_string(a - 1));
  const int keep = a - r.n;
  const int64_t s = tree.leaves_per_node(d), parents = tree.nodes_at(d - 1);
  std::vector<int64_t> leaves;
  leaves.reserve(static_cast<size_t>(parents * keep * s));
  for (int64_t p = 0; p < parents; ++p)
    for (int64_t l = p * a * s; l < (p * a + keep) * s; ++l) leaves.push_back(l);
  std::vector<Level> levels = tree.levels();
  levels[static_cast<size_t>(d)].arity = keep;
  if (keep == 1 && levels[static_cast<size_t>(d)].virtual_group) levels.erase(levels.begin() + d);
  return detail::transformed_tree(tree, std::move(levels), leaves, r.to_string());
}

std::vector<RemoveSpec> valid_removes(const TopoTree& tree) {
  std::vector<RemoveSpec> out;
  for (int d = 1; d <= tree.leaf_depth(); ++d)
    for (int n = 1; n < tree.level(d).arity; ++n) out.push_back({n, d});
  return out;
}

}  // namespace sandwich::topotree
