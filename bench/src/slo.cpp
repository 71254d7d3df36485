#include "bench/slo.h"

#include "common/slo_preset.h"

namespace sandwich::bench {

SloPreset load_slo_preset(const std::string& name_or_path) {
  const SloPresetFile f = read_slo_preset(name_or_path);
  SloPreset p;
  p.name = f.name;
  p.description = f.description;
  p.model = f.model;
  p.mode = f.mode;
  p.slo.ttft_ms = f.ttft_ms;
  p.slo.tpot_ms = f.tpot_ms;
  p.attainment_target = f.attainment_target;
  p.num_prompts = f.num_prompts;
  return p;
}

}  // namespace sandwich::bench
