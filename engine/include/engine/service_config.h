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
// Checks the CPUs exist on this machine; throws std::invalid_argument with the reason.
ServiceConfig parse_service_config(const std::string& text);
ServiceConfig service_config_from_json(const nlohmann::json& j);
// One rank on CPUs 0..threads-1 (threads 0: all cores).
ServiceConfig single_rank_config(int threads);

struct Plan {
  ServiceConfig prefill, decode;
};
// {"prefill": <config>, "decode": <config>} (a tuner's plan may hold more; the rest is ignored).
Plan load_plan(const std::filesystem::path& file);

}  // namespace sandwich
