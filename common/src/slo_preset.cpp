#include "common/slo_preset.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "common/paths.h"

namespace sandwich {

namespace fs = std::filesystem;
using json = nlohmann::json;

SloPreset read_slo_preset(const std::string& name_or_path) {
  fs::path file = name_or_path;
  std::error_code ec;
  if (name_or_path.empty() || !fs::is_regular_file(file, ec)) {
    const fs::path dir = configs_dir() / "slo";
    file = dir / (name_or_path + ".json");
    if (name_or_path.empty() || !fs::is_regular_file(file, ec)) {
      std::set<std::string> known;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") known.insert(e.path().stem().string());
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw std::invalid_argument("unknown SLO preset '" + name_or_path + "'" +
                                  (list.empty()
                                       ? " (no presets in " + dir.string() + "; give a file path)"
                                       : " (known: " + list + "; or give a file)"));
    }
  }
  json j;
  try {
    j = read_json_file(file, file_kinds::kSloPreset);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  if (!j.is_object()) throw std::invalid_argument(file.string() + ": not a JSON object");
  auto positive = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0))
      throw std::invalid_argument(file.string() + ": '" + key + "' must be a positive number");
    return j[key].get<double>();
  };
  auto text = [&](const char* key, const std::string& fallback) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
  };
  SloPreset p;
  p.name = text("name", file.stem().string());
  p.description = text("description", "");
  p.model = text("model", "");
  p.mode = text("mode", "");
  p.ttft_ms = positive("ttft_ms");
  p.tpot_ms = positive("tpot_ms");
  if (j.contains("attainment_target")) {
    const double t = positive("attainment_target");
    if (t > 1)
      throw std::invalid_argument(file.string() + ": 'attainment_target' is a fraction in (0, 1]");
    p.attainment_target = t;
  }
  if (j.contains("num_prompts")) p.num_prompts = static_cast<int>(positive("num_prompts"));
  return p;
}

std::string default_slo_preset(const std::string& model_name) {
  std::error_code ec;
  std::string found;
  std::set<fs::path> files;
  for (const auto& e : fs::directory_iterator(configs_dir() / "slo", ec))
    if (e.path().extension() == ".json") files.insert(e.path());
  for (const fs::path& f : files) {
    try {
      const SloPreset p = read_slo_preset(f.string());
      if (p.model != model_name) continue;
      if (p.mode == "batched") return f.stem().string();
      if (found.empty()) found = f.stem().string();
    } catch (const std::invalid_argument&) {
    }
  }
  return found.empty() ? "batched-1.3b" : found;
}

}  // namespace sandwich
