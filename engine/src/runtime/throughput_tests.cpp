#include "runtime/throughput_tests.h"

#include <algorithm>
#include <chrono>
#include <span>

#include "engine/runtime/batch_entry.h"
#include "engine/runtime/sampler.h"

namespace sandwich::engine {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ThroughputTests::ThroughputTests(const Model& model, KVCache& kv, int prompt_tokens, int gen_tokens,
                                 int depth, int32_t max_step_tokens)
    : config_(model.config),
      kv_(kv),
      gen_tokens_(gen_tokens),
      depth_(depth),
      max_step_tokens_(max_step_tokens),
      logits_(model.config.vocab_size),
      context_filled_(depth == 0) {
  prompt_ = random_tokens(prompt_tokens);
}

std::vector<int32_t> ThroughputTests::random_tokens(int n) {
  std::vector<int32_t> tokens(n);
  for (auto& t : tokens)
    t = static_cast<int32_t>(rng_() % static_cast<uint32_t>(config_.vocab_size));
  return tokens;
}

double ThroughputTests::prefill(Executor& executor) {
  std::vector<int32_t> blocks;
  kv_.reserve(blocks, static_cast<int64_t>(prompt_.size()));
  const auto t0 = std::chrono::steady_clock::now();
  BatchEntry e{prompt_, 0, blocks, true};
  executor.run({&e, 1}, logits_.data());
  const double s = seconds_since(t0);
  kv_.release(blocks);
  return static_cast<double>(prompt_.size()) / s;
}

void ThroughputTests::fill_context(Executor& prefill) {
  const std::vector<int32_t> context = random_tokens(depth_);
  for (int i = 0; i < depth_; i += max_step_tokens_) {
    const int n = std::min(max_step_tokens_, depth_ - i);
    BatchEntry e{std::span<const int32_t>(context.data() + i, n), i, decode_blocks_, true};
    prefill.run({&e, 1}, logits_.data());
  }
  context_filled_ = true;
}

double ThroughputTests::decode(Executor& prefill, Executor& decode) {
  if (decode_blocks_.empty()) kv_.reserve(decode_blocks_, depth_ + gen_tokens_);
  if (!context_filled_) fill_context(prefill);
  int32_t tok = config_.bos_id >= 0 ? config_.bos_id : 1;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < gen_tokens_; ++i) {
    BatchEntry e{std::span<const int32_t>(&tok, 1), depth_ + i, decode_blocks_, true};
    decode.run({&e, 1}, logits_.data());
    tok = argmax(logits_.data(), config_.vocab_size);
  }
  const double s = seconds_since(t0);
  return gen_tokens_ / s;
}

}  // namespace sandwich::engine
