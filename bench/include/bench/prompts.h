#pragma once
// Prompts built to an exact length under the server's own tokenizer, each with a unique salt
// at its start so that no server gets a prefix-cache hit the others do not.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace sandwich::bench {

// The server's tokenizer, as far as prompt building needs it. Implementations throw
// std::runtime_error when the server cannot answer.
class TokenizerApi {
 public:
  virtual ~TokenizerApi() = default;
  virtual std::vector<int> tokenize(const std::string& text, bool add_special) = 0;
  virtual std::string detokenize(const std::vector<int>& ids) = 0;
  // The prompt tokens the server will count for this prompt: the text with special tokens
  // (completions), or the templated conversation where the server can say (chat).
  virtual int count_prompt(const std::string& text) {
    return static_cast<int>(tokenize(text, true).size());
  }
};

struct BuiltPrompt {
  std::string text;
  int tokens = 0;      // by the server's tokenizer, or the estimate
  bool exact = false;  // tokens == the length asked for, by the server's tokenizer
};

// Words that Llama-2 and Llama-3 vocabularies hold as one token each (with the leading space).
const std::vector<std::string>& common_words();
// Pseudo-English sentences of `words` words, varied by seed.
std::string corpus_text(size_t words, uint64_t seed);
// Words unique to request `index` (for index < 128^3), to put at the start of its prompt.
std::string salt_text(int index, uint64_t seed);

class PromptBuilder {
 public:
  // Takes the server's tokenizer (not owned).
  PromptBuilder(TokenizerApi& tokenizer, uint64_t seed);
  // salt + a window of a tokenized corpus (at a random offset), detokenized, counted again and
  // the window resized until the count is n_tokens (a few rounds at most; a merge across the
  // seam can make one length unreachable, then the closest is kept and exact is false).
  BuiltPrompt build(int index, int n_tokens);

 private:
  void grow_corpus(size_t min_tokens);
  TokenizerApi& tok_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<int> corpus_;
};

// Without a tokenizer: salt + common words, counted as one token per word plus one BOS token.
// An approximation (close for Llama-family vocabularies); reports mark it as such.
BuiltPrompt approximate_prompt(int index, int n_tokens, uint64_t seed);

}  // namespace sandwich::bench
