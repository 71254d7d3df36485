#include "grammar/pushdown_stacks.h"

#include <algorithm>
#include <string>

namespace sandwich::engine::grammar {
namespace {

uint64_t key(int32_t pos, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
}

}  // namespace

PushdownStacks::PushdownStacks(const Grammar::Impl& g, StackLimits limits)
    : g_(g), limits_(limits) {
  nodes_.push_back({-1, -1, 0});  // kEmpty
}

int32_t PushdownStacks::intern(int32_t pos, int32_t parent) {
  auto [it, fresh] = node_ids_.try_emplace(key(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (fresh) {
    int32_t depth = nodes_[parent].depth + 1;
    if (depth > limits_.max_depth) {
      node_ids_.erase(it);
      throw GrammarError("grammar: nesting deeper than " + std::to_string(limits_.max_depth) +
                         " rules (the text nests too deep for this grammar)");
    }
    nodes_.push_back({pos, parent, depth});
  }
  return it->second;
}

void PushdownStacks::expand(int32_t pos, int32_t parent, std::vector<int32_t>& out) {
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    auto [p, s] = work_.back();
    work_.pop_back();
    if (!visited_.insert(key(p, s)).second) continue;
    if (visited_.size() > limits_.max_expansions)
      throw GrammarError("grammar: more than " + std::to_string(limits_.max_expansions) +
                         " expansions for one byte (the grammar is too ambiguous)");
    const Element& e = g_.elements[p];
    switch (e.kind) {
      case Element::Kind::Terminal:
        out.push_back(intern(p, s));
        break;
      case Element::Kind::End:
        if (s == kEmpty)
          out.push_back(kEmpty);
        else
          work_.push_back({nodes_[s].pos, nodes_[s].parent});
        break;
      case Element::Kind::RuleRef: {
        // A reference last in its alternative continues where the alternative would: no push.
        int32_t cont = g_.elements[p + 1].kind == Element::Kind::End ? s : intern(p + 1, s);
        const auto& alts = g_.alternatives[e.value];
        for (auto it = alts.rbegin(); it != alts.rend(); ++it) work_.push_back({*it, cont});
        break;
      }
    }
  }
}

void PushdownStacks::finish(std::vector<int32_t>& out) {
  visited_.clear();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > limits_.max_stacks)
    throw GrammarError("grammar: more than " + std::to_string(limits_.max_stacks) +
                       " parses at once (the grammar is too ambiguous)");
}

void PushdownStacks::initial(std::vector<int32_t>& out) {
  out.clear();
  visited_.clear();
  for (int32_t start : g_.alternatives[g_.root]) expand(start, kEmpty, out);
  finish(out);
}

void PushdownStacks::step(std::span<const int32_t> stacks, uint8_t b, std::vector<int32_t>& out) {
  out.clear();
  visited_.clear();
  try {
    for (int32_t s : stacks) {
      if (s == kEmpty) continue;
      const Node& n = nodes_[s];
      if (g_.terminals[g_.elements[n.pos].value].has(b)) expand(n.pos + 1, n.parent, out);
    }
  } catch (...) {
    visited_.clear();
    throw;
  }
  finish(out);
}

size_t PushdownStacks::memory_bytes() const {
  return nodes_.capacity() * sizeof(Node) + node_ids_.size() * 32 + node_ids_.bucket_count() * 8;
}

}  // namespace sandwich::engine::grammar
