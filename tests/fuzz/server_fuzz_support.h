#pragma once
// What the server's request targets share: the vocabulary a served model would have, and their
// rule that a bad request may end in an ApiError (a 4xx answer), nothing else.
#include "api_error.h"
#include "engine/text/tokenizer.h"

namespace sandwich::fuzz {

// A byte-level BPE vocabulary with Llama-3's special tokens.
inline const engine::Tokenizer& served_tokenizer() {
  static const auto t =
      engine::make_tokenizer(engine::make_synthetic_vocab(engine::Vocab::Kind::ByteLevelBPE, 600));
  return *t;
}

template <class F>
void expect_client_error_at_most(F&& f) {
  try {
    f();
  } catch (const server::ApiError&) {
  }
}

}  // namespace sandwich::fuzz
