#pragma once
// Service configurations: how a phase runs — how many rank processes, each on which cores and
// NUMA node. A plan holds one for prefill and one for decode.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sandwich {

struct RankPlacement {
  int numa = 0;
  std::vector<int> cpus;  // one compute thread per CPU
  bool operator==(const RankPlacement&) const = default;
};

struct ServiceConfig {
  std::vector<RankPlacement> ranks;

  int rank_count() const { return static_cast<int>(ranks.size()); }
  std::string to_string() const;  // "2x1 [0] [1]"
  nlohmann::json to_json() const;
  bool operator==(const ServiceConfig&) const = default;
};

// "RxT" (R ranks of T consecutive cores from CPU 0) or JSON {"ranks":[{"numa":0,"cpus":[0,1]}]}.
// Checks the CPUs (and the NUMA nodes, where Linux lists them) exist on this machine; throws
// std::invalid_argument with the reason.
ServiceConfig parse_service_config(const std::string& text);
ServiceConfig service_config_from_json(const nlohmann::json& j);

// The most compute threads a rank may run: 4 x the online CPUs. More than that only
// time-slices the spinning thread team until a step takes minutes.
int max_threads();
// A thread-count option (0: all online CPUs) as a count; throws std::invalid_argument naming
// `what` (e.g. "--threads") when it is negative or above max_threads().
int resolve_threads(int threads, const std::string& what);
// One rank on CPUs 0..threads-1, wrapping around when threads exceed the CPUs (threads 0: all
// cores); throws like resolve_threads.
ServiceConfig single_rank_config(int threads);

struct Plan {
  ServiceConfig prefill, decode;
};
// {"prefill": <config>, "decode": <config>} (a tuner's plan may hold more; the rest is ignored).
Plan load_plan(const std::filesystem::path& file);

}  // namespace sandwich
