#pragma once
// Everything a resumed `sandwich-tune plan` needs: the candidates of each phase with their
// simulated and measured figures (with the cost model's schedules, then with tuned kernels), the
// trace, and what each finished stage decided. Written beside the plan after every stage and on
// Ctrl-C.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topotree/service_config.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {

struct PlanCandidate {
  topotree::ServiceConfig config;
  double simulated_ms = 0;           // the phase's figure (prefill: per request; decode: per step)
  double simulated_decode_1_ms = 0;  // decode: one sequence
  // Measured with the cost model's schedules (the measure stage).
  std::optional<double> measured_ms, measured_decode_1_ms;
  // What the kernels stage did for its GEMMs: "tuned" (every key, by it or by a candidate of the
  // same per-rank shapes), "partly tuned", "untuned" (the budget ran out first); "" before.
  std::string kernels;
  // Measured again with the tuned kernels installed (the remeasure stage).
  std::optional<double> tuned_ms, tuned_decode_1_ms;

  // The figures the final choice uses: the tuned ones where measured, else the cost model's.
  std::optional<double> final_ms() const { return tuned_ms ? tuned_ms : measured_ms; }
  std::optional<double> final_decode_1_ms() const {
    return tuned_decode_1_ms ? tuned_decode_1_ms : measured_decode_1_ms;
  }

  nlohmann::json to_json() const;
  static PlanCandidate from_json(const nlohmann::json& j);
};

struct PlanState {
  nlohmann::json options;         // resume_options_json of the run that made it
  std::vector<std::string> done;  // finished stages
  std::map<std::string, double> seconds;
  double load_seconds = 0;  // of the measure stage's, loading the model
  std::vector<PlanCandidate> prefill, decode;
  std::vector<LengthPair> trace;
  std::string trace_source, params_source;
  int prefill_samples = 0;
  std::vector<std::string> cuts;  // what the budget cut, for the summary
  nlohmann::json choice;          // the choose stage's result: with tuned kernels (the plan's pair)
  nlohmann::json cost_model_choice;  // the pair the cost model's schedules' figures choose
  nlohmann::json kernel_report;      // the kernels stage's keys: asked, distinct, tuned
  bool kernels_started = false;
  int64_t kernel_cap = -1;  // the M the kernels are tuned up to (0: no cap; -1: not decided)

  bool has(const std::string& stage) const;
  double spent() const;  // seconds of the stages so far
  nlohmann::json to_json() const;
  // Throws std::invalid_argument (or nlohmann's errors) for what is not a plan state.
  static PlanState from_json(const nlohmann::json& j);
};

// The compact form of a configuration that plans' messages use.
std::string short_config(const topotree::ServiceConfig& c);

}  // namespace sandwich::tuner
