#pragma once
// The measured evaluator: runs real engine steps (make_executor, dummy BF16 weights with the
// model's shapes, or a quantized file's own weights) under each configuration on this machine and
// times them, for the same figures the simulator predicts: mean prefill latency of the trace's
// requests (in chunks) and the time of one decode step of decode_batch sequences at the trace's
// mean decode context. Multi-rank configurations fork their rank processes per evaluation.
#include <memory>
#include <string>

#include "engine/formats/model_config.h"
#include "tuner/evaluator.h"
#include "tuner/latency_simulator.h"
#include "tuner/trace_sampler.h"

namespace sandwich::engine {
class Model;
class KVCache;
}  // namespace sandwich::engine

namespace sandwich::tuner {

struct MeasureOptions {
  int warmup = 1;                // untimed runs before each measurement
  int decode_steps = 8;          // timed decode steps (the median counts)
  int max_prefill_requests = 8;  // trace requests prefilled per evaluation (0: all)
  // Load the model's own weights instead of dummy ones with its shapes: a quantized file's
  // blocks run on other kernels than BF16 weights, and dummy weights cannot be quantized.
  bool real_weights = false;
};

class MeasuredEvaluator : public ConfigEvaluator {
 public:
  // model: a preset name or a model path (its shapes; the weights are dummy unless
  // options.real_weights).
  MeasuredEvaluator(const std::string& model, RequestTrace trace, WorkloadOptions workload,
                    MeasureOptions options = {});
  ~MeasuredEvaluator() override;

  std::string name() const override { return "measured (engine steps on this machine)"; }
  Prediction evaluate(const topotree::ServiceConfig& config, Phase phase) override;
  // One decode step of `batch` sequences (1..the workload's decode_batch), the median ms.
  Prediction evaluate_decode(const topotree::ServiceConfig& config, int batch);
  const engine::ModelConfig& model_config() const;
  // Whether the loaded weights split over this many ranks (a quantized model's shards must hold
  // whole blocks): for SearchOptions::ranks_fit.
  bool ranks_fit(int ranks) const;

 private:
  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<engine::KVCache> kv_;
  RequestTrace trace_;
  WorkloadOptions workload_;
  MeasureOptions options_;
  int32_t decode_context_ = 0;
};

}  // namespace sandwich::tuner
