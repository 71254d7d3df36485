#include "engine/runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/stop_strings.h"
#include "runtime/forward.h"

namespace sandwich::engine {
namespace {
// Prompt tokens per forward call: bounds the scratch activations of a long prompt.
constexpr int32_t kPrefillChunk = 512;
}  // namespace

struct Generator::Impl {
  const Model& model;
  ForwardKind kind;
  // One KV cache for the model's whole context, shared by both phases' executors (their rank
  // processes map it when they start).
  std::unique_ptr<KVCache> kv;
  std::unique_ptr<Executor> prefill, decode;
};

Generator::Generator(const Model& model, int threads, ForwardKind kind)
    : Generator(model, GeneratorOptions{threads, kind, std::nullopt, std::nullopt, false,
                                        kDefaultKVCacheDType, nullptr}) {}

Generator::Generator(const Model& model, const GeneratorOptions& o)
    : impl_(new Impl{model, o.kind, nullptr, nullptr, nullptr}) {
  if (o.kind == ForwardKind::Reference) return;
  const ModelConfig& c = model.config;
  // A pipeline stage's cache holds its own layers.
  impl_->kv = std::make_unique<KVCache>(
      c, KVCache::bytes_for_tokens(c, c.max_seq_len, o.kv_cache_dtype, model.layers()),
      o.kv_cache_dtype, model.layers());
  const topotree::ServiceConfig pc = o.prefill.value_or(single_rank_config(o.threads));
  const topotree::ServiceConfig dc =
      o.decode.value_or(o.prefill.value_or(single_rank_config(o.threads)));
  ExecutorLimits limits;
  limits.max_tokens = kPrefillChunk;
  limits.max_entries = 1;
  limits.batch_invariant = o.batch_invariant;
  limits.ablation = o.ablation;
  const ExecutorFactory make = o.executor_factory ? o.executor_factory : make_executor;
  // Named, so that a pipeline's nodes run a step under its phase's configuration.
  limits.role = pc == dc ? "prefill and decode" : "prefill";
  impl_->prefill = make(model, *impl_->kv, pc, limits);
  limits.role = "decode";
  impl_->decode = pc == dc ? nullptr : make(model, *impl_->kv, dc, limits);
}

Generator::~Generator() = default;

const KVCache* Generator::kv_cache() const {
  return impl_->kv.get();
}

GenerationResult Generator::generate(const GenerationRequest& req,
                                     const std::function<void(std::string_view)>& on_text) {
  const Model& m = impl_->model;
  const ModelConfig& c = m.config;
  if (req.prompt.empty()) throw std::invalid_argument("the prompt is empty (no tokens)");
  const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt >= c.max_seq_len)
    throw std::invalid_argument("the prompt has " + std::to_string(n_prompt) +
                                " tokens; the model's context is " + std::to_string(c.max_seq_len));
  if (req.max_tokens < 0) throw std::invalid_argument("max_tokens must not be negative");
  for (int32_t t : req.prompt)
    if (t < 0 || t >= c.vocab_size)
      throw std::invalid_argument("prompt token " + std::to_string(t) +
                                  " is outside the vocabulary");
  req.sampling.validate();

  GenerationResult res;
  res.finish_reason = FinishReason::Length;
  if (req.max_tokens == 0) return res;
  const int64_t total = std::min<int64_t>(c.max_seq_len, n_prompt + req.max_tokens);

  Sampler sampler(req.sampling, c.vocab_size, std::random_device{}());
  std::vector<float> logits(c.vocab_size);
  const Tokenizer* tok = m.tokenizer.get();
  std::vector<int32_t> stop_ids;
  if (tok && !req.ignore_eos) stop_ids = tok->stop_ids();
  std::optional<IncrementalDecoder> decoder;
  if (tok) decoder.emplace(*tok, req.prompt.back());
  StopStringMatcher stops(req.stop);
  auto emit = [&](const std::string& s) {
    if (s.empty()) return;
    res.text += s;
    if (on_text) on_text(s);
  };

  std::unique_ptr<ReferenceForward> ref;
  std::vector<int32_t> blocks;
  KVCache* kv = impl_->kv.get();
  struct Release {
    KVCache* kv;
    std::vector<int32_t>& blocks;
    ~Release() {
      if (kv) kv->release(blocks);
    }
  } release{kv, blocks};
  if (kv) {
    if (!kv->reserve(blocks, total)) throw std::logic_error("KV cache sized too small");
  } else {
    ref = std::make_unique<ReferenceForward>(m);
  }
  bool prefilling = true;

  auto forward = [&](std::span<const int32_t> toks, int32_t start, bool want) {
    if (kv) {
      BatchEntry e{toks, start, blocks, want};
      Executor& ex = prefilling || !impl_->decode ? *impl_->prefill : *impl_->decode;
      ex.run({&e, 1}, logits.data());
    } else {
      for (size_t i = 0; i < toks.size(); ++i) {
        auto l = ref->step(toks[i]);
        if (i + 1 == toks.size()) logits = std::move(l);
      }
    }
  };

  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < n_prompt; s += kPrefillChunk) {
    const int64_t n = std::min<int64_t>(kPrefillChunk, n_prompt - s);
    forward(std::span<const int32_t>(req.prompt).subspan(s, n), static_cast<int32_t>(s),
            s + n == n_prompt);
  }
  auto t1 = std::chrono::steady_clock::now();
  prefilling = false;
  bool first = true;
  std::vector<float> raw;  // the logits before the sampler's penalties, for logprobs
  for (int64_t pos = n_prompt;; ++pos) {
    if (req.logprobs >= 0) raw = logits;
    const int32_t next = sampler.sample(logits.data(), req.prompt, res.tokens);
    if (first) {
      t1 = std::chrono::steady_clock::now();
      first = false;
    }
    if (std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end()) {
      res.finish_reason = FinishReason::Stop;
      break;
    }
    res.tokens.push_back(next);
    if (req.logprobs >= 0)
      res.logprobs.push_back({next, Sampler::logprob_of(raw.data(), c.vocab_size, next),
                              req.logprobs > 0
                                  ? Sampler::top_logprobs(raw.data(), c.vocab_size, req.logprobs)
                                  : std::vector<Sampler::TopLogprob>{}});
    if (decoder) emit(stops.push(decoder->push(next)));
    if (stops.stopped()) {
      res.finish_reason = FinishReason::Stop;
      break;
    }
    if (static_cast<int64_t>(res.tokens.size()) >= req.max_tokens || pos + 1 >= total) break;
    forward(std::span<const int32_t>(&res.tokens.back(), 1), static_cast<int32_t>(pos), true);
  }
  if (decoder && !stops.stopped()) {
    emit(stops.push(decoder->flush()));
    emit(stops.flush());
  }
  const auto t2 = std::chrono::steady_clock::now();
  res.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  res.decode_seconds = std::chrono::duration<double>(t2 - t1).count();
  return res;
}

}  // namespace sandwich::engine
