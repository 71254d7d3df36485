#include "tuner/engine_config.h"

#include <nlohmann/json.hpp>

namespace sandwich::tuner {

ServiceConfig to_engine_config(const topo::ServiceConfig& c) {
  ServiceConfig out;
  for (const auto& r : c.ranks) {
    RankPlacement p;
    p.numa = r.numa >= 0 ? r.numa : (r.numa_nodes.empty() ? 0 : r.numa_nodes.front());
    p.cpus = r.cpus;
    out.ranks.push_back(std::move(p));
  }
  return out;
}

nlohmann::json config_json(const topo::ServiceConfig& c) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : c.ranks) {
    nlohmann::json j = {
        {"numa", r.numa >= 0 ? r.numa : (r.numa_nodes.empty() ? 0 : r.numa_nodes.front())},
        {"cpus", r.cpus}};
    if (r.numa < 0) j["numa_nodes"] = r.numa_nodes;
    ranks.push_back(std::move(j));
  }
  return {{"ranks", ranks}};
}

}  // namespace sandwich::tuner
