#include "engine/service_config.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/json_file.h"

namespace sandwich {
namespace {

// Bounds that hold before the machine is asked: ids above them are typos or wrapped integers.
constexpr int64_t kMaxCpuId = (1 << 16) - 1;
constexpr int64_t kMaxNumaId = (1 << 16) - 1;

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// The NUMA nodes Linux reports online ("0" or "0-1,3"); nullopt where that is unknown.
std::optional<std::set<int>> online_numa_nodes() {
  std::ifstream in("/sys/devices/system/node/online");
  std::string text;
  if (!in || !std::getline(in, text) || text.empty()) return std::nullopt;
  std::set<int> nodes;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    int a = 0, b = 0;
    const char* end = item.data() + item.size();
    auto r = std::from_chars(item.data(), end, a);
    if (r.ec != std::errc()) return std::nullopt;
    b = a;
    if (r.ptr != end) {
      if (*r.ptr != '-') return std::nullopt;
      r = std::from_chars(r.ptr + 1, end, b);
      if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
    }
    if (b - a > kMaxNumaId) return std::nullopt;
    for (int i = a; i <= b; ++i) nodes.insert(i);
  }
  return nodes;
}

// "0", "0-3" or "0,2,5": ids as Linux lists them.
std::string id_list(const std::set<int>& ids) {
  if (ids.empty()) return "none";
  if (*ids.rbegin() - *ids.begin() + 1 == static_cast<int>(ids.size()))
    return ids.size() == 1 ? std::to_string(*ids.begin())
                           : std::to_string(*ids.begin()) + "-" + std::to_string(*ids.rbegin());
  std::string s;
  for (int i : ids) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

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

// A count in "RxT": digits only (the regex saw to that), checked for overflow and size.
int64_t short_form_count(const std::string& digits, const std::string& text, const char* what) {
  uint64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  const int n = online_cpus();
  if (r.ec != std::errc() || v > static_cast<uint64_t>(n))
    throw std::invalid_argument("'" + text + "': " + digits + " " + what +
                                " is more than this machine's " + std::to_string(n) + " CPUs");
  return static_cast<int64_t>(v);
}

void check(const ServiceConfig& c) {
  if (c.ranks.empty())
    throw std::invalid_argument("a service configuration needs at least one rank");
  std::set<int> seen;
  const int n = online_cpus();
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    if (c.ranks[r].cpus.empty())
      throw std::invalid_argument("rank " + std::to_string(r) + " has no CPUs");
    for (int cpu : c.ranks[r].cpus) {
      if (cpu < 0 || cpu >= n)
        throw std::invalid_argument("CPU " + std::to_string(cpu) + " of rank " + std::to_string(r) +
                                    " does not exist (this machine has CPUs 0-" +
                                    std::to_string(n - 1) + ")");
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
    throw std::invalid_argument(
        "a service configuration is {\"ranks\": [{\"numa\": N, \"cpus\": [...]}, ...]}");
  ServiceConfig c;
  for (const auto& r : j["ranks"]) {
    RankPlacement p;
    if (!r.is_object() || !r.contains("cpus") || !r["cpus"].is_array())
      throw std::invalid_argument("each rank needs a \"cpus\" list");
    const std::string rank = "rank " + std::to_string(c.ranks.size());
    for (const auto& cpu : r["cpus"]) {
      const std::optional<int64_t> id = json_integer(cpu);
      if (!id) throw std::invalid_argument(rank + ": CPU ids must be integers, got " + cpu.dump());
      if (*id < 0 || *id > kMaxCpuId)
        throw std::invalid_argument(rank + ": CPU id " + cpu.dump() + " is out of range (0-" +
                                    std::to_string(kMaxCpuId) + ")");
      p.cpus.push_back(static_cast<int>(*id));
    }
    if (r.contains("numa")) {
      const nlohmann::json& numa = r["numa"];
      const std::optional<int64_t> node = json_integer(numa);
      if (!node || *node < 0 || *node > kMaxNumaId)
        throw std::invalid_argument(
            rank + ": \"numa\" must be a NUMA node number (an integer >= 0), got " + numa.dump());
      p.numa = static_cast<int>(*node);
    }
    c.ranks.push_back(std::move(p));
  }
  check(c);
  if (const auto nodes = online_numa_nodes())
    for (size_t r = 0; r < c.ranks.size(); ++r)
      if (!nodes->count(c.ranks[r].numa))
        throw std::invalid_argument("NUMA node " + std::to_string(c.ranks[r].numa) + " of rank " +
                                    std::to_string(r) + " does not exist (this machine has node" +
                                    (nodes->size() == 1 ? " " : "s ") + id_list(*nodes) + ")");
  return c;
}

ServiceConfig parse_service_config(const std::string& text) {
  static const std::regex short_form(R"(\s*(\d+)\s*x\s*(\d+)\s*)");
  std::smatch m;
  if (std::regex_match(text, m, short_form)) {
    const int64_t R = short_form_count(m[1], text, "ranks"),
                  T = short_form_count(m[2], text, "cores per rank");
    if (R < 1 || T < 1)
      throw std::invalid_argument("'" + text + "': ranks and cores must be at least 1");
    if (R * T > online_cpus())
      throw std::invalid_argument("'" + text + "' needs " + std::to_string(R * T) +
                                  " cores; this machine has " + std::to_string(online_cpus()));
    ServiceConfig c;
    for (int64_t r = 0; r < R; ++r) {
      RankPlacement p;
      for (int64_t t = 0; t < T; ++t) p.cpus.push_back(static_cast<int>(r * T + t));
      c.ranks.push_back(std::move(p));
    }
    check(c);
    return c;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("'" + text +
                                "' is neither RxT (e.g. 2x1) nor a JSON service configuration");
  }
  return service_config_from_json(j);
}

int max_threads() {
  return 4 * online_cpus();
}

int resolve_threads(int threads, const std::string& what) {
  if (threads < 0 || threads > max_threads())
    throw std::invalid_argument(what + " must be 0 (all cores) to " +
                                std::to_string(max_threads()) + " (4 x this machine's " +
                                std::to_string(online_cpus()) + " CPUs), got " +
                                std::to_string(threads));
  return threads == 0 ? online_cpus() : threads;
}

ServiceConfig single_rank_config(int threads) {
  threads = resolve_threads(threads, "the thread count");
  ServiceConfig c;
  RankPlacement p;
  for (int t = 0; t < threads; ++t) p.cpus.push_back(t % online_cpus());
  c.ranks.push_back(std::move(p));
  return c;
}

Plan load_plan(const std::filesystem::path& file) {
  nlohmann::json j;
  try {
    j = read_json_file(file);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());  // names the file already
  }
  if (!j.is_object() || !j.contains("prefill") || !j.contains("decode"))
    throw std::invalid_argument(file.string() +
                                ": a plan needs \"prefill\" and \"decode\" configurations");
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
