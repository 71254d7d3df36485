// Service configurations as users give them ("2x1", JSON), checked against a machine.
#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/cpu_list.h"
#include "topotree/service_config.h"

namespace sandwich::topotree {
namespace {

// Bounds that hold before the machine is asked: ids above them are typos or wrapped integers.
constexpr int64_t kMaxCpuId = (1 << 16) - 1;
constexpr int64_t kMaxNumaId = (1 << 16) - 1;

// The value of a JSON integer, or nullopt when it is no integer or does not fit in int64.
std::optional<int64_t> json_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

int cpu_count(const LoadedTopology& m) {
  return static_cast<int>(m.all_cpus.size());
}

// A count in "RxT": digits only (the regex saw to that), checked for overflow and size.
int64_t short_form_count(const std::string& digits, const std::string& text, const char* what,
                         const LoadedTopology& m) {
  uint64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc() || v > static_cast<uint64_t>(cpu_count(m)))
    throw std::invalid_argument("'" + text + "': " + digits + " " + what +
                                " is more than this machine's " + std::to_string(cpu_count(m)) +
                                " CPUs");
  return static_cast<int64_t>(v);
}

// Fills in each rank's NUMA nodes from the machine, checking its CPUs and node exist there.
void place(ServiceConfig& c, const LoadedTopology& m) {
  if (c.ranks.empty())
    throw std::invalid_argument("a service configuration needs at least one rank");
  std::set<int> seen;
  const std::vector<int> nodes = m.numa_nodes();
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    Rank& rank = c.ranks[r];
    if (rank.cpus.empty())
      throw std::invalid_argument("rank " + std::to_string(r) + " has no CPUs");
    std::set<int> own;
    for (int cpu : rank.cpus) {
      const auto it = std::lower_bound(m.all_cpus.begin(), m.all_cpus.end(), cpu);
      if (it == m.all_cpus.end() || *it != cpu)
        throw std::invalid_argument("CPU " + std::to_string(cpu) + " of rank " + std::to_string(r) +
                                    " does not exist (this machine has CPUs " +
                                    format_cpu_list(m.all_cpus) + ")");
      if (!seen.insert(cpu).second)
        throw std::invalid_argument("CPU " + std::to_string(cpu) + " is given to two ranks");
      own.insert(m.all_cpus_numa[static_cast<size_t>(it - m.all_cpus.begin())]);
    }
    rank.numa_nodes.assign(own.begin(), own.end());
    if (rank.numa < 0 && rank.numa_nodes.size() == 1) rank.numa = rank.numa_nodes[0];
    if (rank.numa >= 0 && !std::binary_search(nodes.begin(), nodes.end(), rank.numa))
      throw std::invalid_argument("NUMA node " + std::to_string(rank.numa) + " of rank " +
                                  std::to_string(r) + " does not exist (this machine has node" +
                                  (nodes.size() == 1 ? " " : "s ") + format_cpu_list(nodes) + ")");
  }
}

}  // namespace

ServiceConfig service_config_from_json(const nlohmann::json& j, const LoadedTopology& machine) {
  if (!j.is_object() || !j.contains("ranks") || !j["ranks"].is_array())
    throw std::invalid_argument(
        "a service configuration is {\"ranks\": [{\"numa\": N, \"cpus\": [...]}, ...]}");
  ServiceConfig c;
  for (const auto& r : j["ranks"]) {
    Rank rank;
    const std::string name = "rank " + std::to_string(c.ranks.size());
    if (!r.is_object() || !r.contains("cpus") || !(r["cpus"].is_array() || r["cpus"].is_string()))
      throw std::invalid_argument(
          "each rank needs \"cpus\": a list of CPU ids or a CPU list such as \"0-3,8\"");
    if (r["cpus"].is_string()) {
      try {
        rank.cpus = parse_cpu_list(r["cpus"].get<std::string>(), static_cast<int>(kMaxCpuId));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(name + ": \"cpus\" " + e.what());
      }
    }
    for (const auto& cpu : r["cpus"].is_array() ? r["cpus"] : nlohmann::json::array()) {
      const std::optional<int64_t> id = json_integer(cpu);
      if (!id) throw std::invalid_argument(name + ": CPU ids must be integers, got " + cpu.dump());
      if (*id < 0 || *id > kMaxCpuId)
        throw std::invalid_argument(name + ": CPU id " + cpu.dump() + " is out of range (0-" +
                                    std::to_string(kMaxCpuId) + ")");
      rank.cpus.push_back(static_cast<int>(*id));
    }
    if (r.contains("numa")) {
      const nlohmann::json& numa = r["numa"];
      const std::optional<int64_t> node = json_integer(numa);
      if (!node || *node < 0 || *node > kMaxNumaId)
        throw std::invalid_argument(
            name + ": \"numa\" must be a NUMA node number (an integer >= 0), got " + numa.dump());
      rank.numa = static_cast<int>(*node);
    }
    c.ranks.push_back(std::move(rank));
  }
  place(c, machine);
  return c;
}

ServiceConfig parse_service_config(const std::string& text, const LoadedTopology& machine) {
  static const std::regex short_form(R"(\s*(\d+)\s*x\s*(\d+)\s*)");
  std::smatch m;
  if (std::regex_match(text, m, short_form)) {
    const int64_t R = short_form_count(m[1], text, "ranks", machine),
                  T = short_form_count(m[2], text, "cores per rank", machine);
    if (R < 1 || T < 1)
      throw std::invalid_argument("'" + text + "': ranks and cores must be at least 1");
    if (R * T > cpu_count(machine))
      throw std::invalid_argument("'" + text + "' needs " + std::to_string(R * T) +
                                  " cores; this machine has " + std::to_string(cpu_count(machine)));
    ServiceConfig c;
    for (int64_t r = 0; r < R; ++r) {
      Rank rank;
      for (int64_t t = 0; t < T; ++t)
        rank.cpus.push_back(machine.all_cpus[static_cast<size_t>(r * T + t)]);
      c.ranks.push_back(std::move(rank));
    }
    place(c, machine);
    return c;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("'" + text +
                                "' is neither RxT (e.g. 2x1) nor a JSON service configuration");
  }
  return service_config_from_json(j, machine);
}

}  // namespace sandwich::topotree
