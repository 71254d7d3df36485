#pragma once
// Merkle-style hash of a TopoTree: a node's hash combines its own features (level label, NUMA
// memory, cache size, virtual or not) with the hashes of its children in order; the tree's hash
// is the root's. Trees reached by different transform orders (group transforms commute) hash
// alike, so the transformation search expands each tree once.
#include <cstdint>

#include "topotree/topo_tree.h"

namespace sandwich::topotree {

enum class HashMode {
  // Leaves hash by their features only: trees of the same shape are one tree, whichever PUs sit
  // where. Right for a model of the machine, which cannot tell apart two groupings of the same
  // resources with different strides.
  Structure,
  // Leaves also hash their OS index: a strided grouping is a different tree from a contiguous
  // one. For measured search, where a latent structure may favour one of them.
  Placement,
};

uint64_t tree_hash(const TopoTree& tree, HashMode mode);

// Trees that tree_hash(mode) must treat as equal (used to confirm a hash match).
bool equivalent(const TopoTree& a, const TopoTree& b, HashMode mode);

}  // namespace sandwich::topotree
