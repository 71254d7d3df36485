#pragma once
// Grammar-constrained decoding. A grammar (llama.cpp's GBNF, or one made from a JSON Schema, a
// regex or a list of choices) is compiled to a byte-level pushdown automaton; a matcher per
// sequence masks the logits of the tokens whose bytes the grammar cannot take next, so every
// sampling mode (greedy, temperature, top-k/p, min-p, n > 1) draws only from allowed tokens.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sandwich::engine {
class Tokenizer;
namespace grammar {

// A grammar, schema or regex that cannot be compiled, or a matcher past its limits. what() names
// the construct and where it is: "GBNF line 3: undefined rule 'valu'", "JSON Schema at
// /properties/a: 'patternProperties' is not supported".
struct GrammarError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// GBNF text, parsed and compiled to bytes. Immutable: shared between threads and requests.
class Grammar {
 public:
  // Throws GrammarError (syntax, undefined or left-recursive rules, no `root`).
  static std::shared_ptr<const Grammar> parse(std::string_view gbnf,
                                              std::string_view root = "root");
  ~Grammar();
  // Whether all of `text` (bytes) is a sentence of the grammar. For tests and checks; no
  // vocabulary involved.
  bool accepts(std::string_view text) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Grammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Converters to GBNF. Each throws GrammarError naming what it cannot compile.
std::string gbnf_from_json_schema(const nlohmann::json& schema);      // json_schema_to_gbnf.cpp
std::string gbnf_any_json_object();                                   // response_format json_object
std::string gbnf_from_regex(std::string_view pattern);                // a whole-output regex
std::string gbnf_from_choices(std::span<const std::string> choices);  // exactly one of them

// A tokenizer's tokens as the bytes they add to the text, in a byte trie. Built once per served
// model and shared by every grammar. Special (control) tokens are not in it: a grammar never
// produces them, except that the end tokens a matcher is given may end a finished sentence.
class TokenVocabulary {
 public:
  explicit TokenVocabulary(const Tokenizer& tok);
  ~TokenVocabulary();
  int32_t size() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// One grammar over one vocabulary, with the states and token masks found so far (they are
// built lazily and kept for the next sequence using the same grammar). Not thread-safe: all the
// matchers of one automaton are used from one thread (the engine thread). Its memory is bounded
// by max_cache_bytes: masks are dropped least-recently-used first; a grammar whose states alone
// pass the bound makes the matcher throw GrammarError.
class GrammarAutomaton {
 public:
  GrammarAutomaton(std::shared_ptr<const Grammar> grammar,
                   std::shared_ptr<const TokenVocabulary> vocab,
                   size_t max_cache_bytes = size_t{256} << 20);
  ~GrammarAutomaton();
  size_t cache_bytes() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// One sequence's place in its grammar.
class GrammarMatcher {
 public:
  // end_tokens: the tokens that end the sequence (EOS, end of turn, the request's stop tokens);
  // allowed only where the text so far is a whole sentence.
  GrammarMatcher(std::shared_ptr<GrammarAutomaton> automaton, std::vector<int32_t> end_tokens);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Sets the logits (vocab_size values) of every token not allowed here to -inf.
  void mask_logits(float* logits, int32_t vocab_size);
  // Whether one token is allowed here (cheaper than a mask when only the sampled token is
  // checked, as for greedy decoding).
  bool allows(int32_t token);
  // Takes a sampled token. Throws GrammarError if the grammar does not allow it.
  void accept(int32_t token);
  // The tokens left for this sequence, the next one included (max_tokens less those made).
  // From then on a token is allowed only if the sentence can still end within the rest, so a
  // sentence that can be finished in max_tokens is (a random model would otherwise run out of
  // tokens inside a string, and leave JSON that does not parse).
  void limit_tokens(int32_t tokens_left);
  bool can_end() const;   // the text so far is a whole sentence
  bool must_end() const;  // ...and nothing may follow it

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace grammar
}  // namespace sandwich::engine
