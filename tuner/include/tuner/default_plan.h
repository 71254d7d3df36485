#pragma once
// sandwichd's configurations when it is given no plan: the simulator-only search of this
// machine, fast enough for start-up (no measurement and no calibration run: the cached
// calibration's parameters, else the generic ones). `sandwich-tune plan` measures and tunes.
#include <functional>
#include <string>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::tuner {

// The prefill and decode configurations the latency simulator ranks best on this machine for
// `model` stored as `weights` with a KV cache of `kv`, with the cost model's schedules (no
// table). Never throws: if the
// search finds nothing valid here, one rank of every core. `how` (if given) gets how they were
// chosen, for the start-up log: "chosen by the latency simulator in 0.04 s (...)".
// bytes_per_weight > 0 overrides the size `weights` implies (quantized models: Model's).
// ranks_fit, if given, leaves out rank counts the model's weights do not split over (a quantized
// model's: engine's check_rank_count).
engine::Plan default_plan(const engine::ModelConfig& model, engine::WeightDType weights,
                          std::string* how = nullptr,
                          engine::KVCacheDType kv = engine::kDefaultKVCacheDType,
                          double bytes_per_weight = 0,
                          const std::function<bool(int)>& ranks_fit = {});

}  // namespace sandwich::tuner
