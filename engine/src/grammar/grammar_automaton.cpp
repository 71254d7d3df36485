#include "grammar/grammar_automaton.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar {
namespace {

constexpr size_t kMaskOverhead = 96;  // a cached mask's map entry and list node

std::string mib(size_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

size_t GrammarAutomaton::Impl::VectorHash::operator()(const std::vector<int32_t>& v) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ v.size();
  for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull + (h >> 29);
  return static_cast<size_t>(h);
}

GrammarAutomaton::Impl::Impl(std::shared_ptr<const Grammar> grammar,
                             std::shared_ptr<const TokenVocabulary> vocab, size_t max_cache_bytes)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      max_bytes_(max_cache_bytes),
      words_((static_cast<size_t>(vocab_->size()) + 63) / 64),
      stacks_(grammar_->impl()),
      lengths_(grammar_->impl()) {
  std::vector<int32_t> none;
  intern_state(none);  // kDead
  std::vector<int32_t> start;
  stacks_.initial(start);
  if (start.empty() && stacks_.cut())
    throw GrammarError("grammar: its rules nest deeper than " + std::to_string(max_depth()) +
                       " before the first byte");
  initial_ = intern_state(start);
}

void GrammarAutomaton::Impl::compact_if_full() {
  const size_t used = state_bytes_ + stacks_.memory_bytes();
  if (used <= max_bytes_ / 2 || used <= 2 * kept_bytes_) return;
  std::vector<std::vector<std::vector<int32_t>>> live;
  for (int32_t* s : tracked_) {
    live.emplace_back();
    for (int32_t stack : states_[*s]) live.back().push_back(stacks_.positions(stack));
  }
  stacks_.clear();
  states_.clear();
  state_ids_.clear();
  transitions_.clear();
  transitions_.shrink_to_fit();
  depth_cuts_.clear();
  stack_end_.clear();  // by stack and state ids, which start again
  state_end_.clear();
  state_bytes_ = 0;
  drop_masks();
  std::vector<int32_t> none;
  intern_state(none);
  std::vector<int32_t> start;
  stacks_.initial(start);
  initial_ = intern_state(start);
  for (int32_t* s : tracked_) *s = kDead;  // until rebuilt: a matcher left so throws, never reads
  size_t k = 0;
  for (int32_t* s : tracked_) {
    std::vector<int32_t> stacks;
    for (const auto& positions : live[k++]) stacks.push_back(stacks_.rebuild(positions));
    std::sort(stacks.begin(), stacks.end());
    *s = intern_state(stacks);
  }
  kept_bytes_ = state_bytes_ + stacks_.memory_bytes();
  ++compactions_;
}

int32_t GrammarAutomaton::Impl::intern_state(std::vector<int32_t>& stacks) {
  auto it = state_ids_.find(stacks);
  if (it != state_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(states_.size());
  // Its transitions, its stacks (twice: the list and the key) and the map's node.
  const size_t size = 256 * sizeof(int32_t) + 2 * stacks.size() * sizeof(int32_t) + 96;
  evict_until_fits(size);
  if (state_bytes_ + size + stacks_.memory_bytes() > max_bytes_)
    throw GrammarError("grammar: its parse states take more than " + mib(max_bytes_) +
                       " (the grammar or the text is too large to follow)");
  state_bytes_ += size;
  states_.push_back(stacks);
  state_ids_.emplace(std::move(stacks), id);
  transitions_.resize(transitions_.size() + 256, id == kDead ? kDead : -1);
  return id;
}

int32_t GrammarAutomaton::Impl::add_transition(int32_t state, uint8_t b) {
  stacks_.step(states_[state], b, step_out_);
  int32_t t = step_out_.empty() ? kDead : intern_state(step_out_);
  if (t == kDead && stacks_.cut()) depth_cuts_.insert(static_cast<uint64_t>(state) * 256 + b);
  transitions_[static_cast<size_t>(state) * 256 + b] = t;
  return t;
}

int32_t GrammarAutomaton::Impl::walk(int32_t state, std::string_view bytes) {
  for (char c : bytes) {
    if (state == kDead) break;
    state = next(state, static_cast<uint8_t>(c));
  }
  return state;
}

int32_t GrammarAutomaton::Impl::stack_bytes_to_end(int32_t stack) {
  if (stack == PushdownStacks::kEmpty) return 0;
  if (stack_end_.size() < static_cast<size_t>(stacks_.node_count()))
    stack_end_.resize(static_cast<size_t>(stacks_.node_count()), -1);
  int32_t& known = stack_end_[stack];
  if (known < 0) {
    // Frames are shared bottoms: the chain below is usually known already.
    int64_t sum = lengths_.rest(stacks_.top_position(stack));
    const int32_t below = stacks_.below(stack);
    if (sum < kNoEnd) sum += stack_bytes_to_end(below);
    known = static_cast<int32_t>(std::min<int64_t>(sum, kNoEnd));
  }
  return known;
}

int32_t GrammarAutomaton::Impl::bytes_to_end(int32_t state) {
  if (state_end_.size() < states_.size()) state_end_.resize(states_.size(), -1);
  int32_t& known = state_end_[state];
  if (known < 0) {
    int32_t best = kNoEnd;
    for (int32_t stack : states_[state]) best = std::min(best, stack_bytes_to_end(stack));
    known = best;
  }
  return known;
}

int32_t GrammarAutomaton::Impl::compute_mask(int32_t state, std::vector<uint64_t>& bits,
                                             int32_t max_end) {
  int32_t most = 0, least = kNoEnd;
  const auto& v = vocab();
  // One word more than the tokens need: the sink of nodes where no token ends.
  bits.assign(words_ + 1, 0);
  walk_states_.assign(static_cast<size_t>(v.max_depth) + 1, kDead);
  int32_t* at = walk_states_.data();  // at[d]: the state after the first d bytes of the path
  at[0] = state;
  const TrieNode* nodes = v.nodes.data();
  const int32_t* ids = v.token_ids.data();
  const int32_t n = static_cast<int32_t>(v.nodes.size()) - 1;  // the last is the sentinel
  const int32_t* table = transitions_.data();
  const int32_t sink = v.vocab_size;
  for (int32_t i = 0; i < n;) {
    const TrieNode& node = nodes[i];
    const int32_t from = at[node.depth - 1];
    int32_t t = table[static_cast<size_t>(from) * 256 + node.byte];
    if (t < 0) {
      t = add_transition(from, node.byte);
      table = transitions_.data();
    }
    if (t == kDead) {
      i = node.skip;
      continue;
    }
    at[node.depth] = t;
    if (node.token != sink) {
      // The most any allowed token leaves to the end, for mask_within; with a budget, only the
      // tokens that leave no more than max_end.
      const int32_t need = bytes_to_end(t);
      if (need > max_end) {
        ++i;
        continue;
      }
      most = std::max(most, need);
      least = std::min(least, need);
    }
    bits[static_cast<size_t>(node.token) >> 6] |= uint64_t{1} << (node.token & 63);
    if (node.more_tokens) [[unlikely]]
      for (int32_t k = node.tok_begin, end = nodes[i + 1].tok_begin; k < end; ++k)
        bits[static_cast<size_t>(ids[k]) >> 6] |= uint64_t{1} << (ids[k] & 63);
    ++i;
  }
  last_min_end_ = least;
  return most;
}

int32_t GrammarAutomaton::Impl::budget_limit(int32_t state, int32_t max_end) {
  mask(state);  // cached: its fewest and most bytes left
  return std::max(max_end, last_min_end_);
}

const uint64_t* GrammarAutomaton::Impl::mask_within(int32_t state, int32_t max_end) {
  const uint64_t* bits = mask(state);
  if (last_max_end_ <= max_end) return bits;
  const int32_t limit = std::max(max_end, last_min_end_);
  compute_mask(state, within_, limit);
  return within_.data();
}

void GrammarAutomaton::Impl::evict_until_fits(size_t extra) {
  while (!lru_.empty() &&
         state_bytes_ + stacks_.memory_bytes() + mask_bytes_ + extra > max_bytes_) {
    masks_.erase(lru_.back());
    lru_.pop_back();
    mask_bytes_ -= (words_ + 1) * sizeof(uint64_t) + kMaskOverhead;
  }
}

const uint64_t* GrammarAutomaton::Impl::mask(int32_t state) {
  auto it = masks_.find(state);
  if (it != masks_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    last_max_end_ = it->second.max_end;
    last_min_end_ = it->second.min_end;
    return it->second.bits.data();
  }
  last_max_end_ = compute_mask(state, scratch_);
  const size_t size = (words_ + 1) * sizeof(uint64_t) + kMaskOverhead;
  evict_until_fits(size);
  if (state_bytes_ + stacks_.memory_bytes() + mask_bytes_ + size > max_bytes_)
    return scratch_.data();  // too large to keep: computed again when asked again
  lru_.push_front(state);
  auto& entry = masks_[state];
  entry.bits.swap(scratch_);
  entry.lru = lru_.begin();
  entry.max_end = last_max_end_;
  entry.min_end = last_min_end_;
  mask_bytes_ += size;
  return entry.bits.data();
}

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const TokenVocabulary> vocab,
                                   size_t max_cache_bytes)
    : impl_((grammar && vocab)
                ? std::make_unique<Impl>(std::move(grammar), std::move(vocab), max_cache_bytes)
                : throw std::invalid_argument(
                      "GrammarAutomaton: a grammar and a vocabulary are needed")) {}

GrammarAutomaton::~GrammarAutomaton() = default;

size_t GrammarAutomaton::cache_bytes() const {
  return impl_->cache_bytes();
}

}  // namespace sandwich::engine::grammar
