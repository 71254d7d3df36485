#pragma once
// The engine benchmark's two tests, over one KV cache; each call is one repetition and returns
// tokens/s. pp: a random prompt prefilled in one step. tg: decode steps of one token for each of
// `batch` sequences, each over a context of `depth` random tokens, prefilled once (untimed, in
// steps of max_step_tokens) and shared by every repetition, batch and configuration, which
// rewrite the same later slots.
#include <cstdint>
#include <random>
#include <vector>

#include "engine/formats/model.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::engine {

class ThroughputTests {
 public:
  ThroughputTests(const Model& model, KVCache& kv, int prompt_tokens, int gen_tokens, int depth,
                  int32_t max_step_tokens);
  double prefill(Executor& executor);
  // Reserves and fills (with `prefill`) the contexts of `batch` decode sequences, those not yet
  // ready; decode does it too, but untimed work is better out of a counted repetition.
  void prepare_decode(Executor& prefill, int batch);
  // Tokens/s of all `batch` sequences together.
  double decode(Executor& prefill, Executor& decode, int batch = 1);

 private:
  std::vector<int32_t> random_tokens(int n);
  void fill_context(Executor& prefill, std::vector<int32_t>& blocks);

  const ModelConfig& config_;
  KVCache& kv_;
  int gen_tokens_, depth_;
  int32_t max_step_tokens_;
  std::vector<float> logits_;
  // Random ids stand in for a prompt: throughput does not depend on which tokens they are.
  std::mt19937 rng_{1234};
  std::vector<int32_t> prompt_;
  // Each decode sequence's blocks, its context filled; as many as the largest batch so far.
  std::vector<std::vector<int32_t>> decode_blocks_;
};

}  // namespace sandwich::engine
