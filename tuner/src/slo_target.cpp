#include "tuner/slo_target.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "common/paths.h"

namespace sandwich::tuner {
namespace fs = std::filesystem;

SloTarget load_slo_target(const std::string& name_or_path) {
  fs::path file = name_or_path;
  std::error_code ec;
  const fs::path dir = configs_dir() / "slo";
  if (!fs::is_regular_file(file, ec)) {
    file = dir / (name_or_path + ".json");
    if (name_or_path.empty() || !fs::is_regular_file(file, ec)) {
      std::set<std::string> known;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") known.insert(e.path().stem().string());
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw std::invalid_argument("unknown SLO preset '" + name_or_path +
                                  "' (known: " + (list.empty() ? "none in " + dir.string() : list) +
                                  "; or give a file)");
    }
  }
  nlohmann::json j;
  try {
    j = read_json_file(file);
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
  SloTarget t;
  t.name = text("name", file.stem().string());
  t.model = text("model", "");
  t.mode = text("mode", "");
  t.ttft_ms = positive("ttft_ms");
  t.tpot_ms = positive("tpot_ms");
  if (j.contains("attainment_target")) {
    t.attainment = positive("attainment_target");
    if (t.attainment > 1)
      throw std::invalid_argument(file.string() + ": 'attainment_target' is a fraction in (0, 1]");
  }
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
