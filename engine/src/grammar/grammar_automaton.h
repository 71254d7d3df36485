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
#include <vector>

#include "engine/grammar/grammar.h"
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
  bool can_end(int32_t state) const { return !states_[state].empty() && states_[state][0] == 0; }
  bool must_end(int32_t state) const { return states_[state].size() == 1 && can_end(state); }
  // The tokens of the trie allowed in `state`, one bit a token id. Valid until the next call.
  const uint64_t* mask(int32_t state);

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
  };
  int32_t add_transition(int32_t state, uint8_t b);
  int32_t intern_state(std::vector<int32_t>& stacks);
  void compute_mask(int32_t state, std::vector<uint64_t>& bits);
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
  std::vector<int32_t> step_out_, walk_states_;
};

}  // namespace sandwich::engine::grammar
