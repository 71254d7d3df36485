#include "engine/service_config.h"

#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace sandwich {
namespace {

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void check(const ServiceConfig& c) {
  if (c.ranks.empty()) throw std::invalid_argument("a service configuration needs at least one rank");
  std::set<int> seen;
  const int n = online_cpus();
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    if (c.ranks[r].cpus.empty()) throw std::invalid_argument("rank " + std::to_string(r) + " has no CPUs");
    for (int cpu : c.ranks[r].cpus) {
      if (cpu < 0 || cpu >= n)
        throw std::invalid_argument("CPU " + std::to_string(cpu) + " of rank " + std::to_string(r) +
                                    " does not exist (this machine has CPUs 0-" + std::to_string(n - 1) + ")");
      if (!seen.insert(cpu).second)
        throw std::invalid_argument("CPU " + std::to_string(cpu) + " is given to two ranks");
    }
  }
}

}  // namespace

std::string ServiceConfig::to_string() const {
  std::ostringstream os;
  os << ranks.size() << "x" << (ranks.empty() ? 0 : ranks[0].cpus.size());
  for (const auto& r : ranks) {
    os << " [";
    for (size_t i = 0; i < r.cpus.size(); ++i) os << (i ? "," : "") << r.cpus[i];
    os << "]";
  }
  return os.str();
}

nlohmann::json ServiceConfig::to_json() const {
  nlohmann::json rs = nlohmann::json::array();
  for (const auto& r : ranks) rs.push_back({{"numa", r.numa}, {"cpus", r.cpus}});
  return {{"ranks", rs}};
}

ServiceConfig service_config_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("ranks") || !j["ranks"].is_array())
    throw std::invalid_argument("a service configuration is {\"ranks\": [{\"numa\": N, \"cpus\": [...]}, ...]}");
  ServiceConfig c;
  for (const auto& r : j["ranks"]) {
    RankPlacement p;
    if (!r.is_object() || !r.contains("cpus") || !r["cpus"].is_array())
      throw std::invalid_argument("each rank needs a \"cpus\" list");
    for (const auto& cpu : r["cpus"]) {
      if (!cpu.is_number_integer()) throw std::invalid_argument("CPU ids must be integers");
      p.cpus.push_back(cpu.get<int>());
    }
    p.numa = r.value("numa", 0);
    c.ranks.push_back(std::move(p));
  }
  check(c);
  return c;
}

ServiceConfig parse_service_config(const std::string& text) {
  static const std::regex short_form(R"(\s*(\d+)\s*x\s*(\d+)\s*)");
  std::smatch m;
  if (std::regex_match(text, m, short_form)) {
    const int R = std::stoi(m[1]), T = std::stoi(m[2]);
    if (R < 1 || T < 1) throw std::invalid_argument("'" + text + "': ranks and cores must be at least 1");
    if (R * T > online_cpus())
      throw std::invalid_argument("'" + text + "' needs " + std::to_string(R * T) + " cores; this machine has " +
                                  std::to_string(online_cpus()));
    ServiceConfig c;
    for (int r = 0; r < R; ++r) {
      RankPlacement p;
      for (int t = 0; t < T; ++t) p.cpus.push_back(r * T + t);
      c.ranks.push_back(std::move(p));
    }
    check(c);
    return c;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("'" + text + "' is neither RxT (e.g. 2x1) nor a JSON service configuration");
  }
  return service_config_from_json(j);
}

ServiceConfig single_rank_config(int threads) {
  if (threads <= 0) threads = online_cpus();
  ServiceConfig c;
  RankPlacement p;
  for (int t = 0; t < threads; ++t) p.cpus.push_back(t % online_cpus());
  c.ranks.push_back(std::move(p));
  return c;
}

Plan load_plan(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read plan " + file.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(file.string() + ": invalid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("prefill") || !j.contains("decode"))
    throw std::invalid_argument(file.string() + ": a plan needs \"prefill\" and \"decode\" configurations");
  try {
    auto config_of = [](const nlohmann::json& c) {
      // A plan may hold {"config": {...}, "schedules": ...} per phase, the config itself, or
      // its short form ("2x1").
      if (c.is_string()) return parse_service_config(c.get<std::string>());
      return service_config_from_json(c.is_object() && c.contains("config") ? c["config"] : c);
    };
    return {config_of(j["prefill"]), config_of(j["decode"])};
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(file.string() + ": " + e.what());
  }
}

}  // namespace sandwich
