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

// The lengths `sandwich-tune configs` ranks with by default: the ShareGPT trace where the
// shared data is installed, else fixed requests.
RequestTrace default_trace(const engine::ModelConfig& model) {
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

// The search's configuration as this machine's parser reads it: CPUs and nodes checked.
topotree::ServiceConfig checked(const topotree::ServiceConfig& c) {
  return topotree::service_config_from_json(c.to_json());
}

}  // namespace

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
    LatencySimulator sim(local.tree, params, model, default_trace(model), w);
    SearchOptions so;
    so.top_k = 1;
    so.ranks_fit = ranks_fit;
    so.phase = Phase::Prefill;
    plan.prefill = checked(search_configs(local.tree, model, sim, so).ranked.at(0).config);
    so.phase = Phase::Decode;
    plan.decode = checked(search_configs(local.tree, model, sim, so).ranked.at(0).config);
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
