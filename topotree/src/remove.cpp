// remove(n, d): every node of depth d-1 keeps only its left-most children.
#include <stdexcept>

#include "topotree/transforms.h"

namespace sandwich::topo {

std::string RemoveSpec::to_string() const {
  return "remove(" + std::to_string(n) + "," + std::to_string(depth) + ")";
}

TopoTree apply_remove(const TopoTree& tree, const RemoveSpec& r) {
  const std::string what = r.to_string() + ": ";
  if (r.depth < 1 || r.depth > tree.leaf_depth())
    throw std::invalid_argument(what + "depth must be in 1.." + std::to_string(tree.leaf_depth()));
  const int d = r.depth, a = tree.level(d).arity;
  if (r.n < 1 || r.n >= a)
    throw std::invalid_argument(what + "nodes of depth " + std::to_string(d) + " have " +
                                std::to_string(a) + " children per parent; remove between 1 and " +
                                std::to_string(a - 1));
  const int keep = a - r.n;
  const int64_t s = tree.leaves_per_node(d), parents = tree.nodes_at(d - 1);
  const auto src = tree.cpus();
  const auto src_numa = tree.leaf_numa();
  std::vector<int> cpus, numa;
  cpus.reserve(static_cast<size_t>(parents * keep * s));
  numa.reserve(cpus.capacity());
  for (int64_t p = 0; p < parents; ++p) {
    const auto begin = static_cast<size_t>(p * a * s),
               end = static_cast<size_t>((p * a + keep) * s);
    cpus.insert(cpus.end(), src.begin() + begin, src.begin() + end);
    numa.insert(numa.end(), src_numa.begin() + begin, src_numa.begin() + end);
  }
  std::vector<Level> levels = tree.levels();
  levels[static_cast<size_t>(d)].arity = keep;
  if (keep == 1 && levels[static_cast<size_t>(d)].virtual_group) levels.erase(levels.begin() + d);
  TopoTree out(std::move(levels), std::move(cpus), std::move(numa));
  for (const auto& h : tree.history()) out.add_history(h);
  out.add_history(r.to_string());
  return out;
}

std::vector<RemoveSpec> valid_removes(const TopoTree& tree) {
  std::vector<RemoveSpec> out;
  for (int d = 1; d <= tree.leaf_depth(); ++d)
    for (int n = 1; n < tree.level(d).arity; ++n) out.push_back({n, d});
  return out;
}

}  // namespace sandwich::topo
