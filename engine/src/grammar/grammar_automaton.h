#pragma once
// GrammarAutomaton::Impl: a lazily built DFA over bytes whose states are interned sets of
// pushdown stacks, and the token masks of the states asked for, computed by walking the
// vocabulary trie along the DFA and cached least-recently-used first within a byte bound.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/grammar/grammar.h"
#include "grammar/completion_lengths.h"
#include "grammar/pushdown_stacks.h"
#include "grammar/token_trie.h"

namespace sandwich::engine::grammar {

struct GrammarAutomaton::Impl {
  // The state with no parse left: every byte leads back to it.
  static constexpr int32_t kDead = 0;

  Impl(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab,
       size_t max_cache_bytes);

  int32_t initial() const { return initial_; }
  int32_t next(int32_t state, uint8_t b) {
    int32_t t = transitions_[static_cast<size_t>(state) * 256 + b];
    return t >= 0 ? t : add_transition(state, b);
  }
  // The state after all of `bytes`, kDead as soon as none is left.
  int32_t walk(int32_t state, std::string_view bytes);
  // Whether state --b--> kDead because every parse would nest past the depth bound.
  bool cut_by_depth(int32_t state, uint8_t b) const {
    return depth_cuts_.count(static_cast<uint64_t>(state) * 256 + b) > 0;
  }
  int32_t max_depth() const { return StackLimits{}.max_depth; }
  bool can_end(int32_t state) const { return !states_[state].empty() && states_[state][0] == 0; }
  bool must_end(int32_t state) const { return states_[state].size() == 1 && can_end(state); }
  // The tokens of the trie allowed in `state`, one bit a token id. Valid until the next call.
  const uint64_t* mask(int32_t state);
  // The fewest bytes that end a sentence from `state` (kNoEnd when none can).
  int32_t bytes_to_end(int32_t state);
  // mask(), less the tokens after which the sentence needs more than max_end bytes to end (or,
  // when every token needs more, all but those that need the fewest: bytes overstate the tokens
  // a multi-byte vocabulary needs, so the closest way to the end is still worth taking). The
  // cached mask when no allowed token needs that many (the usual case: only near the end of
  // max_tokens is a mask walked afresh).
  const uint64_t* mask_within(int32_t state, int32_t max_end);
  // The budget mask_within applies for max_end: max_end, or the fewest bytes any token leaves.
  int32_t budget_limit(int32_t state, int32_t max_end);

  // Matchers say where they keep their state, so that compact_if_full() can renumber it.
  void track(int32_t* state) { tracked_.insert(state); }
  void untrack(int32_t* state) { tracked_.erase(state); }
  // Called where no walk is under way. When the states fill half the bound (and twice what the
  // last compaction kept), forgets every state, transition and mask but the tracked matchers'
  // states: an automaton kept for many sequences does not fill up with the states of old ones.
  void compact_if_full();
  size_t compactions() const { return compactions_; }
  // Forgets the cached masks (the states and transitions stay): for measuring a mask's walk.
  void drop_masks() {
    masks_.clear();
    lru_.clear();
    mask_bytes_ = 0;
  }

  size_t cache_bytes() const { return state_bytes_ + stacks_.memory_bytes() + mask_bytes_; }
  const TokenVocabulary::Impl& vocab() const { return vocab_->impl(); }
  size_t mask_words() const { return words_; }
  size_t cached_masks() const { return masks_.size(); }
  size_t state_count() const { return states_.size(); }

 private:
  struct VectorHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  struct CachedMask {
    std::vector<uint64_t> bits;
    std::list<int32_t>::iterator lru;
    int32_t max_end = 0;  // the most bytes_to_end after any allowed token
    int32_t min_end = 0;  // the fewest
  };
  int32_t add_transition(int32_t state, uint8_t b);
  int32_t intern_state(std::vector<int32_t>& stacks);
  // Returns the most bytes_to_end after any token it allows (and sets last_min_end_ to the
  // fewest); with max_end, allows only the tokens after which the sentence can end within
  // max_end bytes.
  int32_t compute_mask(int32_t state, std::vector<uint64_t>& bits, int32_t max_end = kNoEnd);
  int32_t stack_bytes_to_end(int32_t stack);
  void evict_until_fits(size_t extra);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  size_t max_bytes_;
  size_t words_;
  PushdownStacks stacks_;
  std::vector<std::vector<int32_t>> states_;
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> state_ids_;
  std::vector<int32_t> transitions_;  // state * 256 + byte -> state, -1 while unknown
  int32_t initial_ = kDead;
  size_t state_bytes_ = 0;
  std::unordered_map<int32_t, CachedMask> masks_;
  std::list<int32_t> lru_;  // most recent first
  size_t mask_bytes_ = 0;
  std::vector<uint64_t> scratch_;  // a mask that does not fit the cache
  std::vector<uint64_t> within_;   // mask_within's, never cached (it depends on the budget)
  CompletionLengths lengths_;
  std::vector<int32_t> stack_end_;  // per stack node, -1 until known
  std::vector<int32_t> state_end_;  // per state, -1 until known
  int32_t last_max_end_ = 0;        // of the mask last computed
  int32_t last_min_end_ = 0;
  std::vector<int32_t> step_out_, walk_states_;
  std::unordered_set<int32_t*> tracked_;
  std::unordered_set<uint64_t> depth_cuts_;  // state * 256 + byte
  size_t kept_bytes_ = 0;                    // the states' bytes after the last compaction
  size_t compactions_ = 0;
};

}  // namespace sandwich::engine::grammar
