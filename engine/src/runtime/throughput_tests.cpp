#include "runtime/throughput_tests.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <stdexcept>
#include <string>

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
      logits_(model.config.vocab_size) {
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

void ThroughputTests::fill_context(Executor& prefill, std::vector<int32_t>& blocks) {
  const std::vector<int32_t> context = random_tokens(depth_);
  for (int i = 0; i < depth_; i += max_step_tokens_) {
    const int n = std::min(max_step_tokens_, depth_ - i);
    BatchEntry e{std::span<const int32_t>(context.data() + i, n), i, blocks, true};
    prefill.run({&e, 1}, logits_.data());
  }
}

void ThroughputTests::prepare_decode(Executor& prefill, int batch) {
  while (static_cast<int>(decode_blocks_.size()) < batch) {
    std::vector<int32_t>& blocks = decode_blocks_.emplace_back();
    if (!kv_.reserve(blocks, depth_ + gen_tokens_))
      throw std::runtime_error("the KV cache has no room for decode sequence " +
                               std::to_string(decode_blocks_.size()));
    fill_context(prefill, blocks);
  }
}

double ThroughputTests::decode(Executor& prefill, Executor& decode, int batch) {
  prepare_decode(prefill, batch);
  const size_t V = static_cast<size_t>(config_.vocab_size);
  if (logits_.size() < V * batch) logits_.resize(V * batch);
  std::vector<int32_t> tokens(batch, config_.bos_id >= 0 ? config_.bos_id : 1);
  std::vector<BatchEntry> entries(batch);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < gen_tokens_; ++i) {
    for (int b = 0; b < batch; ++b)
      entries[b] = {std::span<const int32_t>(&tokens[b], 1), depth_ + i, decode_blocks_[b], true};
    decode.run(entries, logits_.data());
    for (int b = 0; b < batch; ++b) tokens[b] = argmax(logits_.data() + V * b, config_.vocab_size);
  }
  const double s = seconds_since(t0);
  return static_cast<double>(gen_tokens_) * batch / s;
}

}  // namespace sandwich::engine
