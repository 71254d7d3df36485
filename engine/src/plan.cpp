#include "engine/plan.h"

#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"

namespace sandwich {
namespace {

int machine_cpus() {
  return static_cast<int>(topo::this_machine().all_cpus.size());
}

}  // namespace

int max_threads() {
  return 4 * machine_cpus();
}

int resolve_threads(int threads, const std::string& what) {
  if (threads < 0 || threads > max_threads())
    throw std::invalid_argument(what + " must be 0 (all cores) to " +
                                std::to_string(max_threads()) + " (4 x this machine's " +
                                std::to_string(machine_cpus()) + " CPUs), got " +
                                std::to_string(threads));
  return threads == 0 ? machine_cpus() : threads;
}

topo::ServiceConfig single_rank_config(int threads) {
  threads = resolve_threads(threads, "the thread count");
  const topo::LoadedTopology& m = topo::this_machine();
  // Threads past the CPU count share CPUs, so the machine's CPUs are taken in turn (not through
  // parse_service_config, which refuses a CPU given twice).
  std::set<int> nodes;
  topo::Rank rank;
  for (int t = 0; t < threads; ++t) {
    const size_t i = static_cast<size_t>(t) % m.all_cpus.size();
    rank.cpus.push_back(m.all_cpus[i]);
    nodes.insert(m.all_cpus_numa[i]);
  }
  rank.numa_nodes.assign(nodes.begin(), nodes.end());
  rank.numa = nodes.size() == 1 ? *nodes.begin() : -1;
  topo::ServiceConfig c;
  c.ranks.push_back(std::move(rank));
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
      if (c.is_string()) return topo::parse_service_config(c.get<std::string>());
      return topo::service_config_from_json(c.is_object() && c.contains("config") ? c["config"]
                                                                                  : c);
    };
    Plan plan{config_of(j["prefill"]), config_of(j["decode"])};
    if (j.contains("schedules")) {
      if (!j["schedules"].is_string() || j["schedules"].get<std::string>().empty())
        throw std::invalid_argument("\"schedules\" must be the path of a schedule table");
      plan.schedules = file.parent_path() / j["schedules"].get<std::string>();
    }
    return plan;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(file.string() + ": " + e.what());
  }
}

}  // namespace sandwich
