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
  // Every node over `parent` has this depth, so one past the bound was never interned.
  const int32_t depth = nodes_[parent].depth + 1;
  if (depth > limits_.max_depth) {
    cut_ = true;
    return kTooDeep;
  }
  bool fresh;
  const int32_t id =
      node_ids_.find_or_insert(key(pos, parent), static_cast<int32_t>(nodes_.size()), fresh);
  if (fresh) nodes_.push_back({pos, parent, depth});
  return id;
}

void PushdownStacks::expand(int32_t pos, int32_t parent, std::vector<int32_t>& out) {
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    auto [p, s] = work_.back();
    work_.pop_back();
    bool fresh;
    visited_.find_or_insert(key(p, s), 0, fresh);
    if (!fresh) continue;
    if (visited_.size() > limits_.max_expansions)
      throw GrammarError("grammar: more than " + std::to_string(limits_.max_expansions) +
                         " expansions for one byte (the grammar is too ambiguous)");
    const Element& e = g_.elements[p];
    switch (e.kind) {
      case Element::Kind::Terminal: {
        const int32_t stack = intern(p, s);
        if (stack != kTooDeep) out.push_back(stack);
        break;
      }
      case Element::Kind::End:
        if (s == kEmpty)
          out.push_back(kEmpty);
        else
          work_.push_back({nodes_[s].pos, nodes_[s].parent});
        break;
      case Element::Kind::RuleRef: {
        // A reference last in its alternative continues where the alternative would: no push.
        int32_t cont = g_.elements[p + 1].kind == Element::Kind::End ? s : intern(p + 1, s);
        if (cont == kTooDeep) break;
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
  cut_ = false;
  visited_.clear();
  for (int32_t start : g_.alternatives[g_.root]) expand(start, kEmpty, out);
  finish(out);
}

void PushdownStacks::step(std::span<const int32_t> stacks, uint8_t b, std::vector<int32_t>& out) {
  out.clear();
  cut_ = false;
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

std::vector<int32_t> PushdownStacks::positions(int32_t stack) const {
  std::vector<int32_t> out;
  for (; stack != kEmpty; stack = nodes_[stack].parent) out.push_back(nodes_[stack].pos);
  return out;
}

int32_t PushdownStacks::rebuild(std::span<const int32_t> top_first) {
  int32_t s = kEmpty;
  for (auto it = top_first.rbegin(); it != top_first.rend(); ++it) {
    s = intern(*it, s);
    if (s == kTooDeep) throw GrammarError("grammar: a stack to rebuild is past the depth bound");
  }
  return s;
}

void PushdownStacks::clear() {
  nodes_.resize(1);
  nodes_.shrink_to_fit();
  node_ids_.release();
  visited_.release();
}

size_t PushdownStacks::memory_bytes() const {
  return nodes_.capacity() * sizeof(Node) + node_ids_.memory_bytes() + visited_.memory_bytes();
}

}  // namespace sandwich::engine::grammar
