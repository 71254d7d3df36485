#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/grammar/grammar.h"
#include "grammar/grammar_automaton.h"

namespace sandwich::engine::grammar {

struct GrammarMatcher::State {
  std::shared_ptr<GrammarAutomaton> automaton;
  std::vector<int32_t> end_tokens;  // sorted
  int32_t state = GrammarAutomaton::Impl::kDead;
  bool ended = false;  // an end token was accepted
  int32_t tokens_left = INT32_MAX;
  // The most bytes the sentence may still need after the next token.
  int32_t max_end() const { return tokens_left == INT32_MAX ? kNoEnd : tokens_left - 1; }
  std::vector<float> saved;

  State(std::shared_ptr<GrammarAutomaton> a) : automaton(std::move(a)) {
    automaton->impl().track(&state);
  }
  ~State() { automaton->impl().untrack(&state); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  GrammarAutomaton::Impl& a() { return automaton->impl(); }
  bool is_end(int32_t token) const {
    return std::binary_search(end_tokens.begin(), end_tokens.end(), token);
  }
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<GrammarAutomaton> automaton,
                               std::vector<int32_t> end_tokens)
    : s_(automaton ? std::make_unique<State>(std::move(automaton))
                   : throw std::invalid_argument("GrammarMatcher: no automaton")) {
  std::sort(end_tokens.begin(), end_tokens.end());
  end_tokens.erase(std::unique(end_tokens.begin(), end_tokens.end()), end_tokens.end());
  s_->end_tokens = std::move(end_tokens);
  s_->state = s_->a().initial();
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::mask_logits(float* logits, int32_t vocab_size) {
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  if (vocab_size <= 0) return;
  State& s = *s_;
  s.a().compact_if_full();
  if (s.ended) {
    std::fill(logits, logits + vocab_size, kOff);
    return;
  }
  const bool end_ok = s.a().can_end(s.state);
  s.saved.clear();
  for (int32_t t : s.end_tokens) s.saved.push_back(t >= 0 && t < vocab_size ? logits[t] : 0.0f);
  const uint64_t* bits = s.a().mask_within(s.state, s.max_end());
  const int32_t known = std::min(vocab_size, s.a().vocab().vocab_size);
  const int32_t full_words = known / 64;
  for (int32_t w = 0; w < full_words; ++w) {
    uint64_t word = bits[w];
    float* out = logits + static_cast<size_t>(w) * 64;
    if (word == ~uint64_t{0}) continue;
    if (word == 0) {
      for (int k = 0; k < 64; ++k) out[k] = kOff;
      continue;
    }
    // Whichever is fewer: the disallowed tokens set one by one, or the allowed ones kept aside
    // while all 64 are set.
    if (std::popcount(word) >= 32) {
      for (uint64_t off = ~word; off; off &= off - 1) out[std::countr_zero(off)] = kOff;
    } else {
      float keep[64];
      for (uint64_t on = word; on; on &= on - 1)
        keep[std::countr_zero(on)] = out[std::countr_zero(on)];
      for (int k = 0; k < 64; ++k) out[k] = kOff;
      for (uint64_t on = word; on; on &= on - 1)
        out[std::countr_zero(on)] = keep[std::countr_zero(on)];
    }
  }
  for (int32_t t = full_words * 64; t < known; ++t)
    if (!((bits[t >> 6] >> (t & 63)) & 1)) logits[t] = kOff;
  // Ids past the tokenizer's (a padded embedding) are never text.
  for (int32_t t = std::max(known, 0); t < vocab_size; ++t) logits[t] = kOff;
  for (size_t k = 0; k < s.end_tokens.size(); ++k) {
    int32_t t = s.end_tokens[k];
    if (t >= 0 && t < vocab_size) logits[t] = end_ok ? s.saved[k] : kOff;
  }
}

bool GrammarMatcher::allows(int32_t token) {
  State& s = *s_;
  s.a().compact_if_full();
  if (s.ended) return false;
  if (s.is_end(token)) return s.a().can_end(s.state);
  const auto& v = s.a().vocab();
  if (token < 0 || token >= v.vocab_size || !v.in_trie[token]) return false;
  const int32_t next = s.a().walk(s.state, v.token_bytes(token));
  return next != GrammarAutomaton::Impl::kDead &&
         (s.tokens_left == INT32_MAX || s.a().bytes_to_end(next) <= s.max_end() ||
          s.a().bytes_to_end(next) <= s.a().budget_limit(s.state, s.max_end()));
}

void GrammarMatcher::limit_tokens(int32_t tokens_left) {
  s_->tokens_left = std::max(tokens_left, 1);
}

void GrammarMatcher::accept(int32_t token) {
  State& s = *s_;
  // The budget shapes the choice, not what may be taken: a token the grammar allows is taken.
  const int32_t budget = s.tokens_left;
  s.tokens_left = INT32_MAX;
  const bool ok = allows(token);
  s.tokens_left = budget;
  if (!ok) {
    const auto& v = s.a().vocab();
    std::string what = "grammar: token " + std::to_string(token);
    bool too_deep = false;
    if (token >= 0 && token < v.vocab_size && v.in_trie[token]) {
      what += " ('" + std::string(v.token_bytes(token)) + "')";
      int32_t at = s.state;
      for (char c : v.token_bytes(token)) {
        const auto b = static_cast<uint8_t>(c);
        const int32_t next = s.a().next(at, b);
        if (next == GrammarAutomaton::Impl::kDead) {
          too_deep = s.a().cut_by_depth(at, b);
          break;
        }
        at = next;
      }
    }
    if (s.ended)
      what += " after the end of the sentence";
    else if (too_deep)
      what += " would nest deeper than " + std::to_string(s.a().max_depth()) + " rules";
    else
      what += " is not allowed by the grammar here";
    throw GrammarError(what);
  }
  if (s.is_end(token)) {
    s.ended = true;
    return;
  }
  s.state = s.a().walk(s.state, s.a().vocab().token_bytes(token));
}

bool GrammarMatcher::can_end() const {
  return s_->ended || s_->a().can_end(s_->state);
}
bool GrammarMatcher::must_end() const {
  return s_->ended || s_->a().must_end(s_->state);
}

}  // namespace sandwich::engine::grammar
