#pragma once
// The grammar's pushdown automaton. A stack is a chain of grammar positions: its top is the
// terminal to match next, the nodes below are where to continue once the rule above ends. Stacks
// are hash-consed parent-linked nodes, so one is an integer and stacks share their bottoms. A
// rule referenced last in an alternative pushes nothing (a tail call), so right recursion and
// x* loops do not grow the stack. A parse state is a sorted set of stacks, as in llama.cpp.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "grammar/flat_key_map.h"
#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar {

struct StackLimits {
  int32_t max_depth = 2048;         // nodes in one stack (nesting of rules)
  size_t max_stacks = 16384;        // stacks in one state (ambiguity)
  size_t max_expansions = 1 << 18;  // closure steps for one byte
};

class PushdownStacks {
 public:
  // The stack with nothing left to match: the text so far is a whole sentence.
  static constexpr int32_t kEmpty = 0;

  explicit PushdownStacks(const Grammar::Impl& g, StackLimits limits = {});

  // The stacks before the first byte.
  void initial(std::vector<int32_t>& out);
  // The stacks after byte b (sorted, unique; empty when no stack takes b). A stack that would
  // nest past max_depth is dropped (cut() says so): the text may not nest deeper, which is not
  // an error while other parses remain. Throws GrammarError past the other limits.
  void step(std::span<const int32_t> stacks, uint8_t b, std::vector<int32_t>& out);
  // Whether the last initial() or step() dropped a stack for its depth.
  bool cut() const { return cut_; }
  size_t memory_bytes() const;
  // A stack's frames, top first: the position to match next, then where to continue.
  int32_t top_position(int32_t stack) const { return nodes_[stack].pos; }
  int32_t below(int32_t stack) const { return nodes_[stack].parent; }
  int32_t node_count() const { return static_cast<int32_t>(nodes_.size()); }

  // A stack's positions, top first, to rebuild it after clear().
  std::vector<int32_t> positions(int32_t stack) const;
  int32_t rebuild(std::span<const int32_t> top_first);
  // Forgets every stack (their ids with them).
  void clear();

 private:
  struct Node {
    int32_t pos;     // top: a terminal; below: where to continue after a rule
    int32_t parent;  // the rest of the stack
    int32_t depth;
  };
  static constexpr int32_t kTooDeep = -1;
  // The node, or kTooDeep past max_depth.
  int32_t intern(int32_t pos, int32_t parent);
  // Adds the stacks that continue at pos over parent, matching nothing (a closure).
  void expand(int32_t pos, int32_t parent, std::vector<int32_t>& out);
  void finish(std::vector<int32_t>& out);

  const Grammar::Impl& g_;
  StackLimits limits_;
  std::vector<Node> nodes_;
  FlatKeyMap node_ids_;
  FlatKeyMap visited_;  // (position, stack) pairs a closure has expanded
  std::vector<std::pair<int32_t, int32_t>> work_;
  bool cut_ = false;
};

}  // namespace sandwich::engine::grammar
