#pragma once
// The two transforms of a TopoTree, as the Sandwich paper defines them.
//
// group(n, t, d): the L(d) nodes of depth d are gathered into L(d)/n new nodes, a new level
// inserted above depth d. Within the children of each parent, blocks of n*t consecutive nodes
// are tiled, and block b's group j holds nodes j, j+t, ..., j+(n-1)t of that block. Valid when
// 2 <= n < arity(d), t >= 1 and n*t divides arity(d) (otherwise a group would straddle two
// parents or leave nodes out, and the tree would not be symmetric).
// Groups model latent shared structures the OS does not show (e.g. cores sharing an L3 tag).
//
// remove(n, d): every node of depth d-1 drops its n right-most children (1 <= n < arity(d)),
// so fewer cores are active, easing contention on what they share.
#include <string>
#include <vector>

#include "topotree/topo_tree.h"

namespace sandwich::topotree {

struct GroupSpec {
  int n = 2, t = 1, depth = 1;
  std::string to_string() const;  // "group(4,1,3)"
};

struct RemoveSpec {
  int n = 1, depth = 1;
  std::string to_string() const;  // "remove(1,4)"
};

// Throws std::invalid_argument naming the violated condition.
TopoTree apply_group(const TopoTree& tree, const GroupSpec& g);
// A virtual group level left with one node per parent disappears (it no longer groups
// anything); a physical level left with arity 1 stays, since its resource still exists.
TopoTree apply_remove(const TopoTree& tree, const RemoveSpec& r);

// Every valid transform of the tree, by depth, then n, then t (stride 1 first).
std::vector<GroupSpec> valid_groups(const TopoTree& tree);
std::vector<RemoveSpec> valid_removes(const TopoTree& tree);

}  // namespace sandwich::topotree
