#pragma once
// Trees of the paper's machines for the topotree tests, read from configs/topologies/.
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "topotree/hwloc_loader.h"

namespace sandwich::topotree::test {

inline std::filesystem::path topologies_dir() {
  return sandwich::test::source_dir() / "configs" / "topologies";
}

// The "topology" field of a shipped descriptor: a synthetic string, or an XML file next to it.
inline std::string shipped_topology_spec(const std::string& name) {
  std::ifstream in(topologies_dir() / (name + ".json"));
  const auto j = nlohmann::json::parse(in);
  const std::string t = j.at("topology").get<std::string>();
  if (t.ends_with(".xml")) return (topologies_dir() / t).string();
  return t;
}

inline TopoTree shipped_tree(const std::string& name) {
  return load_topology(shipped_topology_spec(name)).tree;
}

}  // namespace sandwich::topotree::test
