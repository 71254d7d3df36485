#pragma once
// The transformation tree: every TopoTree reachable from the fundamental one by group
// transforms (all cores still in use), then by remove transforms on each of those. Trees are
// deduplicated by Merkle hash, so each is visited and expanded once, and visited in
// topological order: a tree only after every tree it can be derived from (more PUs first;
// among equal PUs, fewer levels first).
//
// Pruning: the visitor scores each tree (lower is better, +inf when the tree offers nothing
// usable). A tree reached by removes is expanded further only if it scores better than every
// tree it was derived from (each is one remove away); otherwise its descendants are pruned.
// Since remove(n, d) is generated for every n, a tree one step past the best is still visited,
// just not expanded.
#include <cstdint>
#include <functional>
#include <limits>

#include "topotree/merkle_hash.h"
#include "topotree/topo_tree.h"

namespace sandwich::topotree {

struct ExploreOptions {
  HashMode hash = HashMode::Structure;
  bool removes = true;         // false: group transforms only (all-core trees, for prefill)
  int max_group_levels = 6;    // group transforms applied in sequence at most
  int64_t max_trees = 200000;  // stop (and say so) past this many distinct trees
  double max_seconds = 0;      // stop (and say so) past this much wall time; 0: no limit
};

struct ExploreStats {
  int64_t group_trees = 0;   // distinct all-core trees (the fundamental one included)
  int64_t remove_trees = 0;  // distinct trees with removed PUs
  int64_t transforms = 0;    // transforms applied (candidate children generated)
  int64_t deduplicated = 0;  // children that hashed to a tree already seen
  int64_t pruned = 0;        // trees not expanded because they did not improve
  bool truncated = false;    // max_trees or max_seconds reached
  int64_t explored() const { return group_trees + remove_trees; }
};

struct VisitInfo {
  bool all_cores = true;  // no remove applied
  int64_t order = 0;      // position in the visiting order
};

// Returns the tree's score; lower is better.
using TreeVisitor = std::function<double(const TopoTree&, const VisitInfo&)>;
inline constexpr double kUnusable = std::numeric_limits<double>::infinity();

ExploreStats explore_transforms(const TopoTree& fundamental, const ExploreOptions& options,
                                const TreeVisitor& visit);

}  // namespace sandwich::topotree
