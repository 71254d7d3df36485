#include "tuner/default_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/length_trace.h"
#include "common/paths.h"
#include "topotree/hwloc_loader.h"
#include "tuner/calibration.h"
#include "tuner/config_search.h"
#include "tuner/latency_simulator.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {
namespace {

// The search's configuration as this machine's parser reads it: CPUs and nodes checked.
topotree::ServiceConfig checked(const topotree::ServiceConfig& c) {
  return topotree::service_config_from_json(c.to_json());
}

}  // namespace

// The lengths `sandwich-tune configs` ranks with by default.
RequestTrace startup_trace(const engine::ModelConfig& model) {
  const std::filesystem::path table = default_length_trace();
  std::error_code ec;
  if (std::filesystem::exists(table, ec)) {
    try {
      return sample_trace(read_length_trace(table), 64, 0, model.max_seq_len,
                          table.filename().string());
    } catch (const std::exception&) {
      // An unreadable trace is no reason to stop a server: fixed requests below.
    }
  }
  RequestTrace t;
  const int32_t half = std::max(1, std::min(256, model.max_seq_len / 2));
  t.requests.assign(64, {half, half});
  t.source = "64 fixed requests";
  return t;
}

StartupConfigs startup_configs(const topotree::TopoTree& machine, const MachineParams& params,
                               const engine::ModelConfig& model, const RequestTrace& trace,
                               const WorkloadOptions& workload,
                               const std::function<bool(int)>& ranks_fit,
                               const PlacementBound& bound) {
  LatencySimulator sim(machine, params, model, trace, workload);
  SearchOptions so;
  so.top_k = 1;
  so.ranks_fit = ranks_fit;
  StartupConfigs out;
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    so.phase = ph;
    PlacementAwareResult r =
        search_configs_placement_aware(machine, model, sim, so, params.latent_group, bound);
    (ph == Phase::Prefill ? out.prefill : out.decode) = r.result.ranked.at(0).config;
    if (!r.note.empty()) out.search_note += (out.search_note.empty() ? "" : "; ") + r.note;
  }
  return out;
}

engine::Plan default_plan(const engine::ModelConfig& model, engine::WeightDType weights,
                          std::string* how, engine::KVCacheDType kv, double bytes_per_weight,
                          const std::function<bool(int)>& ranks_fit) {
  const auto t0 = std::chrono::steady_clock::now();
  engine::Plan plan;
  std::string params_note;
  try {
    const topotree::LoadedTopology& local = topotree::this_machine();
    const std::optional<Calibration> calibration = cached_calibration(local.tree);
    const MachineParams params = calibration ? calibration->params() : MachineParams{};
    params_note = calibration ? "with this machine's cached calibration"
                              : "with generic machine parameters, no calibration being cached";
    WorkloadOptions w;
    w.weight_bytes = bytes_per_weight > 0                  ? bytes_per_weight
                     : weights == engine::WeightDType::F32 ? 4
                                                           : 2;
    w.kv_bytes = static_cast<double>(engine::kv_cache_dtype_size(kv));
    const StartupConfigs c =
        startup_configs(local.tree, params, model, startup_trace(model), w, ranks_fit);
    plan.prefill = checked(c.prefill);
    plan.decode = checked(c.decode);
    if (!c.search_note.empty()) params_note += "; " + c.search_note;
  } catch (const std::exception& e) {
    plan.prefill = plan.decode = engine::single_rank_config(0);
    if (how)
      *how = std::string("one rank of all cores: the simulator's search failed (") + e.what() + ")";
    return plan;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (how) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f", seconds);
    *how = "chosen by the latency simulator in " + std::string(s) + " s " + params_note +
           " (sandwich-tune plan measures and tunes them)";
  }
  return plan;
}

}  // namespace sandwich::tuner
