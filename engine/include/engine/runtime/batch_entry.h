#pragma once
// One sequence's share of a forward step.
#include <cstdint>
#include <span>

namespace sandwich::engine {

// What an entry asks of its chunk's final hidden states (after the final norm): embeddings.
enum class HiddenOutput : uint8_t {
  None,
  Last,  // the last token's
  Sum,   // summed over the chunk's tokens, so that a mean can be pooled across chunks
};

struct BatchEntry {
  std::span<const int32_t> tokens;       // new tokens, at positions start_pos, start_pos + 1, ...
  int32_t start_pos = 0;                 // KV of positions [0, start_pos) is already cached
  std::span<const int32_t> block_table;  // must cover start_pos + tokens.size() positions
  bool want_logits = true;               // logits of the last token
  // Logits of every token of the chunk, in order, rather than of the last one only: what scoring
  // a text needs (perplexity, KL divergence), where each position predicts the next token.
  bool all_logits = false;
  HiddenOutput hidden = HiddenOutput::None;

  // Rows of logits this entry gets from a step.
  int64_t logit_rows() const {
    return all_logits ? static_cast<int64_t>(tokens.size()) : (want_logits ? 1 : 0);
  }
  // Rows of hidden state (the model's dim values each) this entry gets from a step.
  int64_t hidden_rows() const { return hidden == HiddenOutput::None ? 0 : 1; }
};

// A pipeline stage's residual stream (a model of some layers): the rows entering its first layer,
// one per token of the step in batch order (null on the stage with the embedding), and where
// those leaving its last layer go (null on the stage with the head, which makes logits).
struct StageIO {
  const float* in = nullptr;
  float* out = nullptr;
};

}  // namespace sandwich::engine
