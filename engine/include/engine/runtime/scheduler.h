#pragma once
// Continuous batching. Requests join and leave the running batch at every step; a step is either
// a prefill step (prompt chunks up to a token budget, under the prefill plan) or a decode step
// (one token for every running sequence, under the decode plan). Steps alternate while both
// kinds of work exist, so a long prompt delays running decodes by one chunk at most. KV blocks
// are allocated on demand with admission control; when they run out the newest sequence is
// preempted (its blocks freed, its tokens recomputed later). Full blocks stay cached for
// requests that start with the same tokens (prefix caching), until their room is needed.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/formats/model.h"
#include "engine/grammar/grammar.h"
#include "engine/plans/plan.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/finish_reason.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/pooling.h"
#include "engine/runtime/sampler.h"

namespace sandwich::engine {

struct SchedulerOptions {
  int32_t max_num_seqs = 64;         // running sequences at most
  int32_t max_batched_tokens = 512;  // prompt tokens per prefill step (chunked prefill budget)
  int32_t max_model_len = 0;  // prompt + output limit; 0 = the model's context; more is refused
  size_t kv_cache_bytes =
      0;  // 0 = enough for max_num_seqs sequences of max_model_len, capped at 4 GiB
  KVCacheDType kv_cache_dtype = kDefaultKVCacheDType;  // F32 or BF16 (half the bytes)
  int32_t max_waiting = 256;                           // bounded waiting queue
  // Each phase's service configuration (one rank of all cores when unset). Multi-rank ones run
  // in rank processes forked when the scheduler starts.
  std::optional<topotree::ServiceConfig> prefill_config, decode_config;
  // Greedy outputs and logprobs independent of the batch (ExecutorLimits::batch_invariant).
  bool batch_invariant = false;
  AblationSwitches ablation;  // ExecutorLimits::ablation
  // Automatic prefix caching: full KV blocks are reused by requests whose tokens start the same
  // (prefix_cache.h).
  bool enable_prefix_caching = true;
  // A step of a multi-rank group not finished by then counts as a hung rank (the group is
  // re-formed and the step's requests fail).
  double rank_step_timeout_seconds = 300;
  // A seam for tests (a fake executor that records the steps) and for other executors. Called
  // once per distinct configuration, prefill's first; null = make_executor.
  ExecutorFactory executor_factory;
};

// Why a sequence was aborted, so that the server can answer with the right status.
enum class AbortReason {
  None,
  Cancelled,    // cancel(): the client went away or the server gave up on the request
  Timeout,      // past EngineRequest::deadline
  Shutdown,     // request_shutdown(false) or the scheduler's destructor
  NoRoom,       // can never fit in the KV cache
  EngineError,  // a step failed
  Unavailable,  // a step failed and the engine cannot run more: a rank group or pipeline node is
                // gone for good (the server is about to exit; another replica can serve it)
  Grammar,      // the request's grammar allowed no token, or passed its limits
};

// What a request hears from the engine thread, as it happens.
struct RequestOutput {
  std::string text;                    // newly final text (valid UTF-8), may be empty
  std::vector<int32_t> tokens;         // new token ids
  std::vector<TokenLogprob> logprobs;  // one per new token when logprobs were asked for
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;  // set when finished
  std::string error;  // set with FinishReason::Abort: what happened, for people
  AbortReason abort_reason = AbortReason::None;  // set with FinishReason::Abort: for code
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  // EngineRequest::prompt_logprobs, in the sequence's first output: one per prompt token from
  // the second on (the first has no context to be predicted from).
  std::vector<PromptTokenLogprob> prompt_logprobs;
  // EngineRequest::embed, with finished: the pooled hidden state, of unit L2 norm.
  std::vector<float> embedding;
};

struct EngineRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 16;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // More tokens that end the sequence with Stop (even with ignore_eos); like a stop token, the
  // one produced is not output.
  std::vector<int32_t> stop_token_ids;
  // Stop tokens cannot be sampled, and stop strings do not match, before this many tokens.
  int32_t min_tokens = 0;
  // false: special tokens generated (e.g. EOS under ignore_eos) appear in the text as written.
  bool skip_special_tokens = true;
  int32_t logprobs = -1;  // -1: none; n >= 0: the chosen token's logprob and the top n
  // Structured output: only tokens this grammar allows are sampled, the sequence's end tokens
  // only where its sentence is whole, and a sentence that can go no further ends the sequence
  // (Stop). Several sequences may share one automaton; it is used on the engine thread only.
  std::shared_ptr<grammar::GrammarAutomaton> grammar;
  // -1: none; n >= 0: each prompt token's logprob, rank and the top n at its position. Such a
  // request takes no prefix-cache hit until they are computed (every position must run).
  int32_t prompt_logprobs = -1;
  // Set: an embedding request. The prompt is prefilled (batched with the rest, no KV kept after)
  // and its final hidden states pooled into RequestOutput::embedding; nothing is generated
  // (max_tokens, sampling and stops are not used) and it finishes with Stop.
  std::optional<Pooling> embed;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Called on the engine thread; must be quick and must not call back into the scheduler,
  // except cancel() (which only queues the id).
  std::function<void(const RequestOutput&)> on_output;
};

struct QueueFull : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SchedulerStats {
  int32_t waiting = 0, running = 0;
  int32_t kv_blocks_total = 0, kv_blocks_used = 0;
  int32_t kv_blocks_cached = 0;  // held by no sequence, kept for the prefix cache (evictable)
  // Tokens of admitted sequences looked up in the prefix cache, and those found (vLLM's
  // prefix_cache_queries and prefix_cache_hits).
  uint64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
  uint64_t prefill_steps = 0, decode_steps = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  // Structured output: time the grammars' masks and checks took (on the engine thread, between
  // steps), and the tokens they chose.
  double grammar_seconds = 0;
  uint64_t grammar_tokens = 0;
  uint64_t prompt_tokens = 0, generation_tokens = 0, preemptions = 0;
  uint64_t finished_stop = 0, finished_length = 0, finished_abort = 0;
  uint64_t rank_restarts = 0;             // rank groups re-formed after a rank died or hung
  double rank_last_recovery_seconds = 0;  // the slowest phase's last re-formation
};

class Scheduler {
 public:
  Scheduler(const Model& model, const SchedulerOptions& options);
  ~Scheduler();  // aborts what is left and joins the engine thread

  // Queues a request and returns its id. Throws std::invalid_argument (empty prompt, prompt or
  // prompt + max_tokens past max_model_len (an embedding's prompt alone), min_tokens past
  // max_tokens, a stop token id outside the vocabulary, bad sampling) or QueueFull.
  uint64_t submit(EngineRequest r);
  // Queues all of them or none (the same errors), so a request of several sequences never half
  // runs. Throws std::invalid_argument when there are more than max_waiting() of them, as they
  // could never be queued together. Returns their ids in order.
  std::vector<uint64_t> submit(std::vector<EngineRequest> rs);
  // Cancels a request (client gone); its KV is freed at the next step. Unknown ids are ignored.
  void cancel(uint64_t id);
  // Stops accepting; finishes running and waiting work (finish = true) or aborts it, and waits
  // for the engine thread. request_shutdown does the same without waiting; a later call with
  // finish = false turns a draining shutdown into an abort.
  void request_shutdown(bool finish);
  void shutdown(bool finish);

  SchedulerStats stats() const;
  // The rank groups' state, both phases together: restarting or failed if either is.
  ExecutorHealth executor_health() const;
  int32_t max_model_len() const;
  int32_t max_waiting() const;
  int32_t max_num_seqs() const;
  // Its size and element type do not change after construction.
  const KVCache& kv_cache() const;
  const Histogram& ttft() const;
  const Histogram& inter_token() const;
  const Histogram& e2e() const;
  // Per finished request (aborts too), as vLLM's request_*_time_seconds: arrival to first
  // scheduled, first scheduled to first token, first token to the end; its prompt and output
  // lengths in tokens.
  const Histogram& queue_time() const;
  const Histogram& prefill_time() const;
  const Histogram& decode_time() const;
  const Histogram& prompt_length() const;
  const Histogram& generation_length() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::engine
