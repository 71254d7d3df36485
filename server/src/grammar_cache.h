#pragma once
// Compiled grammars kept between requests: the masks a grammar's automaton has found are what
// makes the next request with the same schema cheap (clients send the same schema again and
// again). The vocabulary trie is built once, when the first grammar needs it.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/grammar/grammar.h"
#include "engine/text/tokenizer.h"

namespace sandwich::server {

class GrammarCache {
 public:
  // max_grammars automata are kept, each with at most automaton_bytes of states and masks.
  GrammarCache(const engine::Tokenizer& tok, size_t max_grammars, size_t automaton_bytes);

  // The automaton of a GBNF grammar: the cached one, or a new one. Throws GrammarError when the
  // grammar does not compile. Thread-safe; compiling happens outside the lock.
  std::shared_ptr<engine::grammar::GrammarAutomaton> get(const std::string& gbnf);

 private:
  std::shared_ptr<const engine::grammar::TokenVocabulary> vocabulary();

  const engine::Tokenizer& tok_;
  const size_t max_grammars_, automaton_bytes_;
  std::mutex vocab_mu_;
  std::shared_ptr<const engine::grammar::TokenVocabulary> vocab_;
  std::mutex mu_;
  // Most recently used first.
  using Entry = std::pair<std::string, std::shared_ptr<engine::grammar::GrammarAutomaton>>;
  std::list<Entry> lru_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace sandwich::server
