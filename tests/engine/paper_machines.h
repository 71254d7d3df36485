#pragma once
// The paper's machines as synthetic topologies (configs/topologies) and the NUMA node of each
// rank of a service configuration on them, for the weight placement tests.
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "topotree/hwloc_loader.h"
#include "topotree/service_config.h"

namespace sandwich::test {

inline const topotree::LoadedTopology& machine(const std::string& name) {
  static std::map<std::string, topotree::LoadedTopology> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second;
  std::ifstream in(source_dir() / "configs" / "topologies" / (name + ".json"));
  const std::string spec = nlohmann::json::parse(in).at("topology").get<std::string>();
  return loaded.emplace(name, topotree::load_topology(spec)).first->second;
}

// "RxT" on a machine: each rank's memory node.
inline std::vector<int> rank_nodes(const std::string& machine_name, const std::string& config) {
  std::vector<int> nodes;
  for (const topotree::Rank& r :
       topotree::parse_service_config(config, machine(machine_name)).ranks)
    nodes.push_back(r.memory_node());
  return nodes;
}

}  // namespace sandwich::test
