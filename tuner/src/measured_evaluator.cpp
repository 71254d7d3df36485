#include "tuner/measured_evaluator.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

#include "engine/formats/model.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::tuner {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// An executor sized for the workload's steps.
std::unique_ptr<engine::Executor> step_executor(const engine::Model& model, engine::KVCache& kv,
                                                const topotree::ServiceConfig& config,
                                                const WorkloadOptions& w) {
  engine::ExecutorLimits limits;
  limits.max_tokens = w.prefill_chunk;
  limits.max_entries = std::max(1, w.decode_batch);
  return engine::make_executor(model, kv, config, limits);
}

// Token ids do not change the time a step takes; any valid ones do.
struct RandomTokens {
  explicit RandomTokens(int32_t vocab) : vocab_(static_cast<uint32_t>(vocab)) {}
  int32_t operator()() { return static_cast<int32_t>(rng_() % vocab_); }

 private:
  std::mt19937 rng_{7};
  uint32_t vocab_;
};

}  // namespace

MeasuredEvaluator::MeasuredEvaluator(const std::string& model, RequestTrace trace,
                                     WorkloadOptions workload, MeasureOptions options)
    : trace_(std::move(trace)), workload_(workload), options_(options) {
  if (trace_.requests.empty())
    throw std::invalid_argument("the measured evaluator needs a non-empty request trace");
  if (options_.max_prefill_requests > 0 &&
      static_cast<int>(trace_.requests.size()) > options_.max_prefill_requests)
    trace_.requests.resize(static_cast<size_t>(options_.max_prefill_requests));
  engine::LoadOptions lo;
  lo.model = model;
  if (options_.real_weights) {
    lo.load_format = engine::LoadFormat::Auto;
  } else {
    lo.load_format = engine::LoadFormat::Dummy;
    // A loaded F32 model's packed bytes per weight run a little over 4 (padded panels).
    lo.dtype = workload_.weight_bytes >= 4 ? engine::WeightDType::F32 : engine::WeightDType::BF16;
  }
  lo.require_tokenizer = false;
  model_ = engine::load_model(lo);
  const engine::ModelConfig& c = model_->config;
  decode_context_ =
      std::clamp(static_cast<int32_t>(trace_.mean_decode_context()), 1, c.max_seq_len - 2);
  int64_t longest = 1;
  for (const auto& r : trace_.requests)
    longest = std::max<int64_t>(longest, std::min(r.input, c.max_seq_len));
  const int64_t per_seq_blocks = engine::KVCache::blocks_for(decode_context_ + 1);
  const int64_t tokens =
      std::max(longest, per_seq_blocks * engine::KVCache::kBlockTokens * workload_.decode_batch);
  const engine::KVCacheDType kv_dtype =
      workload_.kv_bytes == 4 ? engine::KVCacheDType::F32 : engine::KVCacheDType::BF16;
  kv_ = std::make_unique<engine::KVCache>(
      c,
      engine::KVCache::bytes_for_tokens(c, tokens, kv_dtype) +
          engine::KVCache::block_bytes(c, kv_dtype) * (workload_.decode_batch + 1),
      kv_dtype);
}

MeasuredEvaluator::~MeasuredEvaluator() = default;

const engine::ModelConfig& MeasuredEvaluator::model_config() const {
  return model_->config;
}

bool MeasuredEvaluator::ranks_fit(int ranks) const {
  return engine::rank_count_fits(*model_, ranks);
}

Prediction MeasuredEvaluator::evaluate(const topotree::ServiceConfig& config, Phase phase) {
  if (phase == Phase::Decode) return evaluate_decode(config, workload_.decode_batch);
  const engine::ModelConfig& c = model_->config;
  auto ex = step_executor(*model_, *kv_, config, workload_);
  RandomTokens token(c.vocab_size);
  Prediction p;
  {
    std::vector<float> logits(static_cast<size_t>(c.vocab_size));
    auto prefill = [&](const LengthPair& r) {
      const int32_t n = std::min(r.input, c.max_seq_len - 1);
      std::vector<int32_t> tokens(static_cast<size_t>(n)), table;
      for (auto& t : tokens) t = token();
      if (!kv_->reserve(table, n))
        throw std::runtime_error("the measured evaluator's KV cache is too small");
      const auto t0 = Clock::now();
      for (int32_t done = 0; done < n;) {
        const int32_t chunk = std::min(workload_.prefill_chunk, n - done);
        engine::BatchEntry e{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(done),
                                                                      static_cast<size_t>(chunk)),
                             done, table, done + chunk == n};
        ex->run({&e, 1}, logits.data());
        done += chunk;
      }
      const double ms = ms_since(t0);
      kv_->release(table);
      return ms;
    };
    for (int i = 0; i < options_.warmup; ++i) prefill(trace_.requests.front());
    double total = 0;
    for (const auto& r : trace_.requests) total += prefill(r);
    p.ms = total / static_cast<double>(trace_.requests.size());
    return p;
  }
}

Prediction MeasuredEvaluator::evaluate_decode(const topotree::ServiceConfig& config, int b) {
  if (b < 1 || b > workload_.decode_batch)
    throw std::invalid_argument("the measured evaluator decodes 1.." +
                                std::to_string(workload_.decode_batch) + " sequences, not " +
                                std::to_string(b));
  const engine::ModelConfig& c = model_->config;
  auto ex = step_executor(*model_, *kv_, config, workload_);
  RandomTokens token(c.vocab_size);
  Prediction p;
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(b));
  std::vector<int32_t> tokens(static_cast<size_t>(b));
  for (auto& t : tables)
    if (!kv_->reserve(t, decode_context_ + 1))
      throw std::runtime_error("the measured evaluator's KV cache is too small");
  std::vector<engine::BatchEntry> batch;
  for (int i = 0; i < b; ++i) {
    tokens[static_cast<size_t>(i)] = token();
    batch.push_back({std::span<const int32_t>(&tokens[static_cast<size_t>(i)], 1), decode_context_,
                     tables[static_cast<size_t>(i)], true});
  }
  std::vector<float> logits(static_cast<size_t>(c.vocab_size) * static_cast<size_t>(b));
  for (int i = 0; i < options_.warmup; ++i) ex->run(batch, logits.data());
  std::vector<double> steps;
  for (int i = 0; i < std::max(1, options_.decode_steps); ++i) {
    const auto t0 = Clock::now();
    ex->run(batch, logits.data());
    steps.push_back(ms_since(t0));
  }
  for (auto& t : tables) kv_->release(t);
  std::nth_element(steps.begin(), steps.begin() + static_cast<long>(steps.size() / 2), steps.end());
  p.ms = steps[steps.size() / 2];
  return p;
}

}  // namespace sandwich::tuner
