#pragma once
// sandwichd's configurations when it is given no plan: the simulator-only search of this
// machine, fast enough for start-up (no measurement and no calibration run: the cached
// calibration's parameters, else the generic ones). `sandwich-tune plan` measures and tunes.
#include <functional>
#include <string>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/runtime/kv_cache.h"
#include "topotree/topo_tree.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_params.h"
#include "tuner/placement_aware_search.h"

namespace sandwich::tuner {

struct StartupConfigs {
  topotree::ServiceConfig prefill, decode;
  std::string search_note;  // the placement-aware search's, for the start-up line ("" if none)
};

// The search default_plan runs, on any machine: each phase's best configuration by the latency
// simulator with `params`, the placement hash searched too where they have a latent group
// (placement_aware_search.h, within `bound`). Throws std::invalid_argument where no
// configuration fits.
StartupConfigs startup_configs(const topotree::TopoTree& machine, const MachineParams& params,
                               const engine::ModelConfig& model, const RequestTrace& trace,
                               const WorkloadOptions& workload,
                               const std::function<bool(int)>& ranks_fit = {},
                               const PlacementBound& bound = kStartupPlacementBound);

// The trace it ranks with: ShareGPT's lengths where the shared data is installed, else fixed
// requests.
RequestTrace startup_trace(const engine::ModelConfig& model);

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
