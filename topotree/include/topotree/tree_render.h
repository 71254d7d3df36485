#pragma once
// Pictures of a TopoTree for people: a level table and an indented tree as text, or Graphviz.
#include <string>

#include "topotree/topo_tree.h"

namespace sandwich::topotree {

// One line per level: depth, label, arity, nodes, PUs per node, NUMA nodes per node.
std::string level_table(const TopoTree& tree);

// The tree indented by depth, one line per node above the leaves, leaves listed as PU ranges.
// Runs of identical siblings beyond the first `expand_siblings` are summarized on one line
// ("... 14 more L3 like this (PUs 8-127)"); expand_siblings <= 0 shows every node.
std::string text_tree(const TopoTree& tree, int expand_siblings = 2);

// A Graphviz digraph: one box per node (label, NUMA node, PUs), leaves as small ellipses.
std::string dot_graph(const TopoTree& tree, const std::string& title);

// "24MB", "512KB".
std::string format_bytes(uint64_t bytes);

}  // namespace sandwich::topotree
