#include "bench/slo.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "common/json_file.h"
#include "common/paths.h"

namespace sandwich::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

SloPreset load_slo_preset(const std::string& name_or_path) {
  fs::path file = name_or_path;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    const fs::path dir = configs_dir() / "slo";
    file = dir / (name_or_path + ".json");
    if (!fs::is_regular_file(file, ec)) {
      std::set<std::string> known;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") known.insert(e.path().stem().string());
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw std::invalid_argument("unknown SLO preset '" + name_or_path + "'" +
                                  (list.empty()
                                       ? " (no presets in " + dir.string() + "; give a file path)"
                                       : " (known: " + list + ")"));
    }
  }
  json j;
  try {
    j = read_json_file(file);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  if (!j.is_object()) throw std::invalid_argument(file.string() + ": not a JSON object");
  auto positive = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() <= 0)
      throw std::invalid_argument(file.string() + ": '" + key + "' must be a positive number");
    return j[key].get<double>();
  };
  SloPreset p;
  p.name = j.value("name", file.stem().string());
  p.description = j.value("description", "");
  p.model = j.value("model", "");
  p.mode = j.value("mode", "");
  p.slo.ttft_ms = positive("ttft_ms");
  p.slo.tpot_ms = positive("tpot_ms");
  if (j.contains("attainment_target")) {
    const double t = positive("attainment_target");
    if (t > 1)
      throw std::invalid_argument(file.string() + ": 'attainment_target' is a fraction in (0, 1]");
    p.attainment_target = t;
  }
  if (j.contains("num_prompts")) p.num_prompts = static_cast<int>(positive("num_prompts"));
  return p;
}

}  // namespace sandwich::bench
