#pragma once
// SLO presets (configs/slo/*.json): the paper's latency targets by model and setting, read by the
// serving benchmark and by the tuner's plan command.
#include <optional>
#include <string>

namespace sandwich {

struct SloPreset {
  std::string name, description, model, mode;  // mode: "single-sequence" or "batched"
  double ttft_ms = 0, tpot_ms = 0;
  std::optional<double> attainment_target;  // e.g. 0.9 for a P90 SLO
  std::optional<int> num_prompts;           // the paper's request count for this setting

  // The share of requests that must meet both targets: the preset's, else 0.9 (P90).
  double attainment() const { return attainment_target.value_or(0.9); }
};

// A file path, or the name of a preset in configs_dir()/slo (common/paths.h). Throws
// std::invalid_argument naming the presets that exist when the name is unknown, or what is wrong
// with the file.
SloPreset read_slo_preset(const std::string& name_or_path);

// The preset made for this model (its "model" field; batched preferred), else batched-1.3b.
std::string default_slo_preset(const std::string& model_name);

}  // namespace sandwich
