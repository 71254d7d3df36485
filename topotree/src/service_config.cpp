// sandwich-config: cutting a TopoTree horizontally into ranks.
#include "topotree/service_config.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/cpu_list.h"

namespace sandwich::topotree {

bool ServiceConfig::spans_numa() const {
  for (const Rank& r : ranks)
    if (r.numa_nodes.size() > 1) return true;
  return false;
}

nlohmann::json ServiceConfig::to_json() const {
  nlohmann::json rs = nlohmann::json::array();
  for (const Rank& r : ranks) {
    nlohmann::json j = {{"numa", r.memory_node()}, {"cpus", r.cpus}};
    if (r.numa_nodes.size() > 1) j["numa_nodes"] = r.numa_nodes;
    rs.push_back(std::move(j));
  }
  return {{"ranks", rs}};
}

uint64_t ServiceConfig::key() const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const Rank& r : ranks) {
    add(0xffffffffull);  // rank separator, so [0,1][2] and [0][1,2] differ
    for (int c : r.cpus) add(static_cast<uint64_t>(c));
  }
  return h;
}

ServiceConfig ServiceConfig::canonical() const {
  ServiceConfig c = *this;
  c.canonicalize();
  return c;
}

void ServiceConfig::canonicalize() {
  for (Rank& r : ranks) std::sort(r.cpus.begin(), r.cpus.end());
  std::sort(ranks.begin(), ranks.end(),
            [](const Rank& a, const Rank& b) { return a.cpus < b.cpus; });
}

std::string ServiceConfig::placement() const {
  // NUMA set of each rank ("3" or "2+3") -> how many ranks sit there.
  std::map<std::vector<int>, int> per_set;
  for (const Rank& r : ranks) ++per_set[r.numa_nodes];
  std::string sets;
  int each = -1;
  bool uniform = true, singles = true;
  std::vector<int> single_ids;
  for (const auto& [nodes, count] : per_set) {
    if (!sets.empty()) sets += ',';
    if (nodes.size() > 1) sets += '{';
    sets += format_cpu_list(nodes);
    if (nodes.size() > 1) sets += '}';
    if (nodes.size() == 1) single_ids.push_back(nodes[0]);
    singles = singles && nodes.size() == 1;
    if (each >= 0 && count != each) uniform = false;
    each = count;
  }
  if (singles) sets = format_cpu_list(single_ids);
  std::string out =
      std::to_string(rank_count()) + (rank_count() == 1 ? " rank" : " ranks") + " on NUMA " + sets;
  if (uniform) {
    out += " (" + std::to_string(each) + " each)";
  } else {
    out += " (";
    bool first = true;
    for (const auto& [nodes, count] : per_set) {
      if (!first) out += ',';
      out += std::to_string(count);
      first = false;
    }
    out += ")";
  }
  return out;
}

std::string ServiceConfig::to_string(int max_ranks) const {
  std::string s = std::to_string(rank_count()) + "x" + std::to_string(threads_per_rank());
  for (int i = 0; i < rank_count(); ++i) {
    if (i == max_ranks) {
      s += " ...";
      break;
    }
    s += " [" + format_cpu_list(ranks[static_cast<size_t>(i)].cpus) + "]";
  }
  return s;
}

ServiceConfig cut(const TopoTree& tree, int depth) {
  if (depth < 0 || depth > tree.leaf_depth())
    throw std::invalid_argument("cut depth " + std::to_string(depth) + " is outside the tree (0.." +
                                std::to_string(tree.leaf_depth()) + ")");
  ServiceConfig c;
  c.cut_depth = depth;
  c.cut_label = tree.level(depth).label;
  const int64_t n = tree.nodes_at(depth);
  c.ranks.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Rank r;
    const auto cpus = tree.node_cpus(depth, i);
    r.cpus.assign(cpus.begin(), cpus.end());
    r.numa_nodes = tree.node_numa_nodes(depth, i);
    r.numa = r.numa_nodes.size() == 1 ? r.numa_nodes[0] : -1;
    c.ranks.push_back(std::move(r));
  }
  return c;
}

std::vector<ServiceConfig> all_cuts(const TopoTree& tree) {
  std::vector<ServiceConfig> out;
  for (int d = 0; d <= tree.leaf_depth(); ++d) out.push_back(cut(tree, d));
  return out;
}

}  // namespace sandwich::topotree
