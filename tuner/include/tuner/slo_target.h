#pragma once
// The latency targets a plan is chosen for: an SLO preset of configs/slo/ (common/slo_preset.h,
// the serving benchmark's presets) or a file of the same form.
#include <string>

namespace sandwich::tuner {

struct SloTarget {
  std::string name, model, mode;  // mode: "batched" or "single-sequence"
  double ttft_ms = 0, tpot_ms = 0;
  double attainment = 0.9;  // the share of requests that must meet both ("attainment_target")
};

// A file path or a preset name in configs_dir()/slo. Throws std::invalid_argument naming the
// known presets when the name is unknown, or what is wrong with the file.
SloTarget load_slo_target(const std::string& name_or_path);

// The preset made for this model (its "model" field; batched preferred), else batched-1.3b.
std::string default_slo_preset(const std::string& model_name);

}  // namespace sandwich::tuner
