#include "tuner/machine_description.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "common/paths.h"
#include "topotree/hwloc_loader.h"

namespace sandwich::tuner {
namespace fs = std::filesystem;
namespace {

std::string names_list() {
  std::string s;
  for (const auto& n : shipped_topology_names()) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none found in " + topologies_dir().string() : s;
}

nlohmann::json read_json(const fs::path& file) {
  try {
    return read_json_file(file, file_kinds::kMachineDescription);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument("topology descriptor: " + std::string(e.what()));
  }
}

MachineParams params_of(const nlohmann::json& j, const fs::path& file, int depth) {
  if (j.contains("params")) {
    MachineParams p = MachineParams::from_json(j["params"], file.string());
    if (p.source == "generic defaults")
      p.source = "published specs (" + file.filename().string() + ")";
    return p;
  }
  if (j.contains("params_from") && depth < 4) {
    const fs::path other = file.parent_path() / (j["params_from"].get<std::string>() + ".json");
    return params_of(read_json(other), other, depth + 1);
  }
  throw std::invalid_argument(file.string() +
                              ": a topology descriptor needs \"params\" or \"params_from\"");
}

MachineDescription machine_from_json(const nlohmann::json& j, const fs::path& file) {
  if (!j.contains("topology") || !j["topology"].is_string())
    throw std::invalid_argument(file.string() +
                                ": a topology descriptor needs a \"topology\" string");
  std::string spec = j["topology"].get<std::string>();
  if (spec.ends_with(".xml")) spec = (file.parent_path() / spec).string();
  topotree::LoadedTopology l = topotree::load_topology(spec);
  MachineDescription m{.name = j.value("name", file.stem().string()),
                       .description = j.value("description", ""),
                       .tree = std::move(l.tree),
                       .source = std::move(l.source),
                       .notes = std::move(l.notes),
                       .params = params_of(j, file, 0),
                       .local = false,
                       .memory_bytes = l.memory_bytes,
                       .cluster = std::nullopt};
  return m;
}

MachineDescription from_descriptor(const fs::path& file, int depth = 0);

// A cluster's node: a shipped name or descriptor file (beside this one first), or an inline
// machine descriptor; never itself a cluster.
MachineDescription cluster_node(const nlohmann::json& node, const fs::path& file, int depth) {
  if (node.is_object()) return machine_from_json(node, file);
  if (!node.is_string())
    throw std::invalid_argument(file.string() +
                                ": the cluster needs \"node\": a shipped topology name or a "
                                "machine descriptor {\"topology\", \"params\"}");
  const std::string n = node.get<std::string>();
  fs::path other = file.parent_path() / (n.ends_with(".json") ? n : n + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(other, ec)) other = topologies_dir() / (n + ".json");
  if (!fs::is_regular_file(other, ec))
    throw std::invalid_argument(file.string() + ": the cluster's node '" + n +
                                "' is not a shipped topology (" + names_list() +
                                ") nor a descriptor beside it");
  return from_descriptor(other, depth + 1);
}

MachineDescription from_descriptor(const fs::path& file, int depth) {
  const nlohmann::json j = read_json(file);
  if (!j.is_object())
    throw std::invalid_argument(file.string() + ": a topology descriptor is a JSON object");
  if (!j.contains("cluster")) return machine_from_json(j, file);
  if (depth > 0)
    throw std::invalid_argument(file.string() + ": a cluster's node must be one machine");
  const nlohmann::json& c = j["cluster"];
  Cluster cluster = cluster_from_json(c, file.string());
  if (!c.contains("node"))
    throw std::invalid_argument(file.string() +
                                ": the cluster needs \"node\" (a shipped topology name or an "
                                "inline machine descriptor)");
  MachineDescription m = cluster_node(c["node"], file, depth);
  m.name = j.value("name", file.stem().string());
  const std::string node_text = m.description.empty() ? m.name : m.description;
  m.description = j.value("description", std::to_string(cluster.nodes) + " x " + node_text);
  m.cluster = std::move(cluster);
  return m;
}

}  // namespace

fs::path topologies_dir() {
  return configs_dir() / "topologies";
}

std::vector<std::string> shipped_topology_names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(topologies_dir(), ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

MachineDescription load_machine(const std::string& spec) {
  if (spec.empty()) {
    const topotree::LoadedTopology& l = topotree::this_machine();
    return MachineDescription{.name = "this machine",
                              .description = "",
                              .tree = l.tree,
                              .source = l.source,
                              .notes = l.notes,
                              .params = std::nullopt,
                              .local = true,
                              .memory_bytes = l.memory_bytes,
                              .cluster = std::nullopt};
  }
  std::error_code ec;
  if (spec.ends_with(".json") && fs::is_regular_file(spec, ec)) return from_descriptor(spec);
  const bool name_like = spec.find_first_of(" :/[") == std::string::npos;
  if (name_like) {
    const fs::path shipped = topologies_dir() / (spec + ".json");
    if (fs::is_regular_file(shipped, ec)) return from_descriptor(shipped);
  }
  try {
    topotree::LoadedTopology l = topotree::load_topology(spec);
    return MachineDescription{.name = spec,
                              .description = l.source,
                              .tree = std::move(l.tree),
                              .source = std::move(l.source),
                              .notes = std::move(l.notes),
                              .params = std::nullopt,
                              .local = false,
                              .memory_bytes = l.memory_bytes,
                              .cluster = std::nullopt};
  } catch (const std::invalid_argument& e) {
    if (name_like)
      throw std::invalid_argument("unknown topology '" + spec + "': not a shipped topology (" +
                                  names_list() +
                                  "), not a file and not an hwloc synthetic description");
    throw;
  }
}

}  // namespace sandwich::tuner
