#pragma once
// The engine benchmark's two tests, over one KV cache; each call is one repetition and returns
// tokens/s. pp: a random prompt prefilled in one step. tg: single-token decode steps over a
// context of `depth` random tokens, prefilled once (untimed, in steps of max_step_tokens) and
// shared by every repetition and configuration, which rewrite the same later slots.
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
  // The first call fills the context with `prefill`.
  double decode(Executor& prefill, Executor& decode);

 private:
  std::vector<int32_t> random_tokens(int n);
  void fill_context(Executor& prefill);

  const ModelConfig& config_;
  KVCache& kv_;
  int gen_tokens_, depth_;
  int32_t max_step_tokens_;
  std::vector<float> logits_;
  // Random ids stand in for a prompt: throughput does not depend on which tokens they are.
  std::mt19937 rng_{1234};
  std::vector<int32_t> prompt_;
  std::vector<int32_t> decode_blocks_;
  bool context_filled_;
};

}  // namespace sandwich::engine
