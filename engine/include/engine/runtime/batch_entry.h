#pragma once
// One sequence's share of a forward step.
#include <cstdint>
#include <span>

namespace sandwich::engine {

struct BatchEntry {
  std::span<const int32_t> tokens;       // new tokens, at positions start_pos, start_pos + 1, ...
  int32_t start_pos = 0;                 // KV of positions [0, start_pos) is already cached
  std::span<const int32_t> block_table;  // must cover start_pos + tokens.size() positions
  bool want_logits = true;               // logits of the last token
  // Logits of every token of the chunk, in order, rather than of the last one only: what scoring
  // a text needs (perplexity, KL divergence), where each position predicts the next token.
  bool all_logits = false;

  // Rows of logits this entry gets from a step.
  int64_t logit_rows() const {
    return all_logits ? static_cast<int64_t>(tokens.size()) : (want_logits ? 1 : 0);
  }
};

}  // namespace sandwich::engine
