#include "topotree/merkle_hash.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace sandwich::topotree {
namespace {

// splitmix64 finalizer: a cheap mix with full avalanche, so combined hashes do not collide on
// permutations the way a plain XOR would.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t combine(uint64_t h, uint64_t v) {
  return mix(h ^ mix(v));
}

uint64_t features_hash(const Level& l) {
  uint64_t h = std::hash<std::string>{}(l.label);
  h = combine(h, l.cache_bytes);
  h = combine(h, (l.numa_memory ? 1u : 0u) | (l.virtual_group ? 2u : 0u));
  return h;
}

}  // namespace

uint64_t tree_hash(const TopoTree& tree, HashMode mode) {
  const int leaf = tree.leaf_depth();
  // Hashes of the nodes of the current depth, left to right; built bottom-up.
  std::vector<uint64_t> below;
  const uint64_t leaf_features = features_hash(tree.level(leaf));
  if (mode == HashMode::Placement) {
    below.reserve(static_cast<size_t>(tree.leaf_count()));
    for (int cpu : tree.cpus()) below.push_back(combine(leaf_features, static_cast<uint64_t>(cpu)));
  } else {
    below.assign(static_cast<size_t>(tree.leaf_count()), leaf_features);
  }
  for (int d = leaf - 1; d >= 0; --d) {
    const uint64_t f = features_hash(tree.level(d));
    const int a = tree.level(d + 1).arity;
    std::vector<uint64_t> here(static_cast<size_t>(tree.nodes_at(d)));
    for (size_t i = 0; i < here.size(); ++i) {
      uint64_t h = combine(f, static_cast<uint64_t>(a));
      for (int c = 0; c < a; ++c)
        h = combine(h, below[i * static_cast<size_t>(a) + static_cast<size_t>(c)]);
      here[i] = h;
    }
    below = std::move(here);
  }
  return below[0];
}

bool equivalent(const TopoTree& a, const TopoTree& b, HashMode mode) {
  if (a.levels() != b.levels()) return false;
  if (mode == HashMode::Structure) return true;
  return std::equal(a.cpus().begin(), a.cpus().end(), b.cpus().begin(), b.cpus().end());
}

}  // namespace sandwich::topotree
