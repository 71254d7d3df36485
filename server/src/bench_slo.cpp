#include "server/bench_slo.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace sandwich::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<std::string> slo_preset_dirs() {
  std::vector<fs::path> c;
  if (const char* env = std::getenv("SANDWICH_CONFIGS"); env && *env)
    c.push_back(fs::path(env) / "slo");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    c.push_back(exe.parent_path().parent_path().parent_path() / "configs" /
                "slo");  // <repo>/<build>/bin/x
  c.push_back(fs::current_path(ec) / "configs" / "slo");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : c) {
    const std::string s = d.lexically_normal().string();
    if (fs::is_directory(d, ec) && seen.insert(s).second) out.push_back(s);
  }
  return out;
}

SloPreset load_slo_preset(const std::string& name_or_path) {
  fs::path file = name_or_path;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    std::set<std::string> known;
    file.clear();
    for (const auto& d : slo_preset_dirs()) {
      for (const auto& e : fs::directory_iterator(d, ec))
        if (e.path().extension() == ".json") known.insert(e.path().stem().string());
      if (file.empty() && fs::is_regular_file(fs::path(d) / (name_or_path + ".json"), ec))
        file = fs::path(d) / (name_or_path + ".json");
    }
    if (file.empty()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw std::invalid_argument("unknown SLO preset '" + name_or_path + "'" +
                                  (list.empty() ? " (no configs/slo folder found; give a file path)"
                                                : " (known: " + list + ")"));
    }
  }
  std::ifstream in(file);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::invalid_argument(file.string() + ": not a JSON object");
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
