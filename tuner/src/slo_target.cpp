#include "tuner/slo_target.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include "common/paths.h"
#include "common/slo_preset.h"

namespace sandwich::tuner {
namespace fs = std::filesystem;

SloTarget load_slo_target(const std::string& name_or_path) {
  const SloPresetFile f = read_slo_preset(name_or_path);
  SloTarget t;
  t.name = f.name;
  t.model = f.model;
  t.mode = f.mode;
  t.ttft_ms = f.ttft_ms;
  t.tpot_ms = f.tpot_ms;
  t.attainment = f.attainment_target.value_or(0.9);
  return t;
}

std::string default_slo_preset(const std::string& model_name) {
  std::error_code ec;
  std::string found;
  std::set<fs::path> files;
  for (const auto& e : fs::directory_iterator(configs_dir() / "slo", ec))
    if (e.path().extension() == ".json") files.insert(e.path());
  for (const fs::path& f : files) {
    try {
      const SloTarget t = load_slo_target(f.string());
      if (t.model != model_name) continue;
      if (t.mode == "batched") return f.stem().string();
      if (found.empty()) found = f.stem().string();
    } catch (const std::invalid_argument&) {
    }
  }
  return found.empty() ? "batched-1.3b" : found;
}

}  // namespace sandwich::tuner
