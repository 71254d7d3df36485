#include "grammar_cache.h"

namespace sandwich::server {

namespace grammar = engine::grammar;

GrammarCache::GrammarCache(const engine::Tokenizer& tok, size_t max_grammars,
                           size_t automaton_bytes)
    : tok_(tok),
      max_grammars_(std::max<size_t>(1, max_grammars)),
      automaton_bytes_(automaton_bytes) {}

std::shared_ptr<const grammar::TokenVocabulary> GrammarCache::vocabulary() {
  // Held while building: requests that come meanwhile wait for the one trie.
  std::lock_guard<std::mutex> lock(vocab_mu_);
  if (!vocab_) vocab_ = std::make_shared<const grammar::TokenVocabulary>(tok_);
  return vocab_;
}

std::shared_ptr<grammar::GrammarAutomaton> GrammarCache::get(const std::string& gbnf) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(gbnf); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto automaton = std::make_shared<grammar::GrammarAutomaton>(grammar::Grammar::parse(gbnf),
                                                               vocabulary(), automaton_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(gbnf); it != index_.end()) return it->second->second;  // a race
  lru_.emplace_front(gbnf, automaton);
  index_[gbnf] = lru_.begin();
  if (lru_.size() > max_grammars_) {
    // Sequences still using it keep it alive; only the cache lets go.
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return automaton;
}

}  // namespace sandwich::server
