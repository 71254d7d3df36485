#pragma once
// Drops the texts of special tokens from streamed text. Requests with tools are decoded keeping
// special tokens, so that the tool-call parser sees markers such as <|python_tag|>; the content
// then loses the other special tokens here, as skip_special_tokens would have dropped them.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer.h"

namespace sandwich::server {

// The special tokens' texts of a vocabulary, sorted, without `keep` (the parser's markers).
std::vector<std::string> special_token_texts(const engine::Tokenizer& tok,
                                             const std::vector<std::string>& keep);

class SpecialTextFilter {
 public:
  // `texts`: sorted (special_token_texts); must outlive the filter.
  explicit SpecialTextFilter(const std::vector<std::string>& texts) : texts_(texts) {}
  // The text so far without the special texts; a tail that may be the start of one is held back.
  std::string push(std::string_view text);
  // What is held back (no special text can complete any more).
  std::string flush();

 private:
  const std::vector<std::string>& texts_;
  std::string held_;
};

}  // namespace sandwich::server
