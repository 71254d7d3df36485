#pragma once
// Single-sequence generation: prefill the prompt, then decode until max_tokens, a stop token or
// a stop string. The command-line tools and the tests use it; the server has its own scheduler.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/finish_reason.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/sampler.h"

namespace sandwich::engine {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // must not be empty
  int32_t max_tokens = 16;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int32_t logprobs = -1;  // -1: none; n >= 0: each token's logprob and the top n (raw logits)
};

struct GenerationResult {
  std::vector<int32_t> tokens;         // generated ids (a final stop token is not included)
  std::vector<TokenLogprob> logprobs;  // one per token of `tokens` when logprobs >= 0
  std::string text;                    // their text, stop string removed
  FinishReason finish_reason = FinishReason::None;  // Stop or Length
  double prefill_seconds = 0;                       // prompt processing and the first token
  double decode_seconds = 0;                        // the remaining tokens
};

enum class ForwardKind { Fast, Reference };

struct GeneratorOptions {
  int threads = 0;  // one rank on CPUs 0..threads-1 when no configuration is given (0: all cores)
  ForwardKind kind = ForwardKind::Fast;
  // Service configurations of the two phases (multi-rank ones run in forked rank processes).
  std::optional<topotree::ServiceConfig> prefill, decode;
  bool batch_invariant = false;                        // ExecutorLimits::batch_invariant
  KVCacheDType kv_cache_dtype = kDefaultKVCacheDType;  // F32 or BF16
  // Makes the executors (a pipeline's head: PipelineTool::executor_factory); null =
  // make_executor.
  ExecutorFactory executor_factory;
  AblationSwitches ablation;  // ExecutorLimits::ablation
};

class Generator {
 public:
  Generator(const Model& model, int threads, ForwardKind kind = ForwardKind::Fast);
  Generator(const Model& model, const GeneratorOptions& options);
  ~Generator();

  // Throws std::invalid_argument for an empty prompt, a prompt that fills the context, or bad
  // sampling parameters. on_text receives text as it becomes final (valid UTF-8).
  GenerationResult generate(const GenerationRequest& req,
                            const std::function<void(std::string_view)>& on_text = {});
  // The fast path's KV cache (null on the reference path).
  const KVCache* kv_cache() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::engine
