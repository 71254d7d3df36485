#include "engine/scoring/perplexity.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/runtime/executor.h"

namespace sandwich::engine {

std::vector<int32_t> scoring_chunk(std::span<const int32_t> tokens, int32_t n_ctx, int64_t i,
                                   int32_t bos) {
  const auto start = static_cast<size_t>(i * n_ctx);
  if (n_ctx <= 0 || i < 0 || start + static_cast<size_t>(n_ctx) > tokens.size())
    throw std::out_of_range("chunk " + std::to_string(i) + " of " + std::to_string(n_ctx) +
                            " tokens is past the text's " + std::to_string(tokens.size()));
  std::vector<int32_t> chunk(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                             tokens.begin() + static_cast<std::ptrdiff_t>(start + n_ctx));
  if (bos >= 0) chunk[0] = bos;
  return chunk;
}

struct ChunkScorer::Impl {
  const Model& model;
  int32_t n_ctx, batch;
  std::unique_ptr<KVCache> kv;
  std::unique_ptr<Executor> executor;
  std::vector<int32_t> blocks;
  std::vector<float> step_logits;
};

ChunkScorer::ChunkScorer(const Model& model, const ScorerOptions& o) {
  const ModelConfig& c = model.config;
  if (o.n_ctx < kMinScoringContext)
    throw std::invalid_argument("the context of a chunk must be at least " +
                                std::to_string(kMinScoringContext) + " tokens, got " +
                                std::to_string(o.n_ctx));
  if (o.n_ctx > c.max_seq_len)
    throw std::invalid_argument("a chunk of " + std::to_string(o.n_ctx) +
                                " tokens is longer than the model's context of " +
                                std::to_string(c.max_seq_len));
  if (o.batch < 1)
    throw std::invalid_argument("the batch must be at least 1 token, got " +
                                std::to_string(o.batch));
  const int32_t step = std::min(o.batch, o.n_ctx);
  impl_.reset(new Impl{model, o.n_ctx, step, nullptr, nullptr, {}, {}});
  impl_->kv = std::make_unique<KVCache>(
      c, KVCache::bytes_for_tokens(c, o.n_ctx, o.kv_cache_dtype, model.layers()), o.kv_cache_dtype,
      model.layers());
  ExecutorLimits limits;
  limits.max_tokens = step;
  limits.max_entries = 1;
  limits.max_logit_rows = step;
  limits.batch_invariant = o.batch_invariant;
  limits.ablation = o.ablation;
  limits.role = "prefill";
  impl_->executor = (o.executor_factory ? o.executor_factory : make_executor)(model, *impl_->kv,
                                                                              o.config, limits);
  if (!impl_->kv->reserve(impl_->blocks, o.n_ctx)) throw std::logic_error("KV cache too small");
}

ChunkScorer::~ChunkScorer() = default;

std::vector<float> ChunkScorer::run(std::span<const int32_t> chunk) {
  Impl& s = *impl_;
  const int64_t V = s.model.config.vocab_size;
  const int32_t n_ctx = s.n_ctx, first = scored_first(n_ctx), end = n_ctx - 1;
  if (static_cast<int64_t>(chunk.size()) != n_ctx)
    throw std::invalid_argument("a chunk holds " + std::to_string(n_ctx) + " tokens, got " +
                                std::to_string(chunk.size()));
  std::vector<float> out(static_cast<size_t>(scored_count(n_ctx) * V));
  // Steps of up to `batch` tokens, each over the KV of the ones before; only steps that reach
  // the scored half return logits (every position's), and only the scored rows are kept.
  for (int32_t p0 = 0; p0 < n_ctx; p0 += s.batch) {
    const int32_t n = std::min(s.batch, n_ctx - p0);
    const int32_t r0 = std::max(p0, first), r1 = std::min(p0 + n, end);
    BatchEntry e{chunk.subspan(p0, n), p0, s.blocks, false, r0 < r1};
    s.step_logits.resize(static_cast<size_t>(e.logit_rows() * V));
    s.executor->run({&e, 1}, s.step_logits.data());
    if (r0 < r1)
      std::copy(s.step_logits.begin() + (r0 - p0) * V, s.step_logits.begin() + (r1 - p0) * V,
                out.begin() + (r0 - first) * V);
  }
  return out;
}

}  // namespace sandwich::engine
