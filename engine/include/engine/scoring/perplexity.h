#pragma once
// Scoring a text as llama.cpp's llama-perplexity does: the text's tokens cut into chunks of
// n_ctx (a partial last chunk is dropped), each chunk's first token replaced by BOS, the model
// run over the whole chunk from position 0, and the chunk's second half scored: the logits at
// positions [n_ctx / 2, n_ctx - 1) predict the tokens at [n_ctx / 2 + 1, n_ctx). Every scored
// token has at least n_ctx / 2 tokens of context, so chunks are comparable.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/formats/model.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

// The first scored position of a chunk and how many are scored.
constexpr int32_t scored_first(int32_t n_ctx) {
  return n_ctx / 2;
}
constexpr int32_t scored_count(int32_t n_ctx) {
  return n_ctx - 1 - n_ctx / 2;
}
// The smallest chunk that scores two tokens (an error estimate needs two).
constexpr int32_t kMinScoringContext = 4;

// Chunk i of `tokens` (n_ctx of them from i * n_ctx), its first token replaced by `bos` (none
// when bos < 0), as llama-perplexity feeds it.
std::vector<int32_t> scoring_chunk(std::span<const int32_t> tokens, int32_t n_ctx, int64_t i,
                                   int32_t bos);

struct ScorerOptions {
  int32_t n_ctx = 512;
  int32_t batch = 512;             // tokens per forward step (llama.cpp's -b)
  topotree::ServiceConfig config;  // runs the chunks (a prefill phase: whole chunks at a time)
  KVCacheDType kv_cache_dtype = kDefaultKVCacheDType;
  bool batch_invariant = false;
  AblationSwitches ablation;         // ExecutorLimits::ablation
  ExecutorFactory executor_factory;  // null = make_executor
};

// Runs chunks through the engine's forward pass with the logits of every position
// (BatchEntry::all_logits). One KV cache of n_ctx positions, reused by each chunk.
class ChunkScorer {
 public:
  // Throws std::invalid_argument for n_ctx below kMinScoringContext or beyond the model's
  // context, or a batch below 1.
  ChunkScorer(const Model& model, const ScorerOptions& options);
  ~ChunkScorer();

  // The logits of the scored positions of one chunk of n_ctx tokens: scored_count(n_ctx) rows
  // of the model's vocab_size values.
  std::vector<float> run(std::span<const int32_t> chunk);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::engine
