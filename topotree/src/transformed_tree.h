#pragma once
// What the two transforms (group, remove) share: the depth they may act on, and how the tree
// they make is put together (private to topotree/).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "topotree/topo_tree.h"

namespace sandwich::topotree::detail {

// Throws unless depth is one a transform can act on: below the root, down to the leaves.
// `what` names the transform, for the message.
inline void check_transform_depth(const TopoTree& tree, int depth, const std::string& what) {
  if (depth < 1 || depth > tree.leaf_depth())
    throw std::invalid_argument(what + ": depth must be in 1.." +
                                std::to_string(tree.leaf_depth()));
}

// The tree transform `step` makes of `from`: these levels over the leaves of `from` taken in
// the order of `leaves` (indices into from's leaves), and from's history followed by `step`.
inline TopoTree transformed_tree(const TopoTree& from, std::vector<Level> levels,
                                 const std::vector<int64_t>& leaves, const std::string& step) {
  const auto src = from.cpus();
  const auto src_numa = from.leaf_numa();
  std::vector<int> cpus, numa;
  cpus.reserve(leaves.size());
  numa.reserve(leaves.size());
  for (int64_t l : leaves) {
    cpus.push_back(src[static_cast<size_t>(l)]);
    numa.push_back(src_numa[static_cast<size_t>(l)]);
  }
  TopoTree out(std::move(levels), std::move(cpus), std::move(numa));
  for (const auto& h : from.history()) out.add_history(h);
  out.add_history(step);
  return out;
}

}  // namespace sandwich::topotree::detail
