#include "tuner/latent_group_probe.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "topotree/transforms.h"
#include "tuner/calibration.h"

namespace sandwich::tuner {
namespace {

// Position (within the parent) of member k of group g under group(n, t): blocks of n t
// consecutive cores, group j of a block holding j, j + t, ..., j + (n - 1) t.
int member(int n, int t, int g, int k) {
  return (g / t) * n * t + g % t + k * t;
}

}  // namespace

nlohmann::json LatentGroupProbe::to_json() const {
  return {{"cores", cores},   {"stride", stride},         {"packed", packed},
          {"spread", spread}, {"packed_gbs", packed_gbs}, {"spread_gbs", spread_gbs}};
}

LatentGroupProbe LatentGroupProbe::from_json(const nlohmann::json& j) {
  LatentGroupProbe p;
  p.cores = j.at("cores").get<int>();
  p.stride = j.at("stride").get<int>();
  p.packed = j.at("packed").get<std::vector<int>>();
  p.spread = j.at("spread").get<std::vector<int>>();
  p.packed_gbs = j.at("packed_gbs").get<double>();
  p.spread_gbs = j.at("spread_gbs").get<double>();
  if (p.cores < 2 || p.stride < 1 || p.packed_gbs < 0 || p.spread_gbs < 0)
    throw std::invalid_argument("bad latent group probe record");
  return p;
}

std::vector<LatentGroupProbe> latent_group_candidates(const topotree::TopoTree& t,
                                                      int max_threads) {
  const int cd = topotree::core_depth(t);
  if (cd < 1) return {};
  const int per_parent = t.level(cd).arity;
  // The first parent on the first NUMA node.
  const int first_numa = t.leaf_numa()[0];
  int64_t parent = -1;
  for (int64_t i = 0; i < t.nodes_at(cd - 1) && parent < 0; ++i)
    if (t.node_numa(cd - 1, i) == first_numa) parent = i;
  if (parent < 0) return {};
  auto cpu = [&](int position) { return t.node_cpus(cd, parent * per_parent + position)[0]; };
  std::vector<LatentGroupProbe> out;
  for (const topotree::GroupSpec& g : topotree::valid_groups(t)) {
    if (g.depth != cd || (g.t != 1 && g.n * g.t != per_parent)) continue;
    if (max_threads > 0 && g.n > max_threads) continue;
    LatentGroupProbe p;
    p.cores = g.n;
    p.stride = g.t;
    for (int k = 0; k < g.n; ++k) p.packed.push_back(cpu(member(g.n, g.t, 0, k)));
    // Spread: round after round, one core from each of `count` evenly spaced groups.
    const int groups = per_parent / g.n;
    for (int placed = 0, round = 0; placed < g.n; ++round) {
      const int count = std::min(groups, g.n - placed);
      for (int s = 0; s < count; ++s, ++placed)
        p.spread.push_back(cpu(member(g.n, g.t, s * groups / count, round)));
    }
    out.push_back(std::move(p));
  }
  return out;
}

void measure_latent_groups(std::vector<LatentGroupProbe>& probes, size_t bytes_per_thread) {
  for (LatentGroupProbe& p : probes) {
    // Alternated, so a neighbour's burst is as likely to hit either figure.
    p.packed_gbs = probe_read_bandwidth_gbs(p.packed, bytes_per_thread, 2);
    p.spread_gbs = probe_read_bandwidth_gbs(p.spread, bytes_per_thread, 2);
    p.packed_gbs = std::max(p.packed_gbs, probe_read_bandwidth_gbs(p.packed, bytes_per_thread, 2));
    p.spread_gbs = std::max(p.spread_gbs, probe_read_bandwidth_gbs(p.spread, bytes_per_thread, 2));
  }
}

LatentGroupParams latent_group_from_probes(const std::vector<LatentGroupProbe>& probes) {
  LatentGroupParams best;
  double best_ratio = 1 - kLatentGroupMinLoss;
  for (const LatentGroupProbe& p : probes) {
    if (!(p.packed_gbs > 0) || !(p.spread_gbs > 0)) continue;
    const double ratio = p.packed_gbs / p.spread_gbs;
    if (ratio < best_ratio) {
      best_ratio = ratio;
      best = {.cores = p.cores, .stride = p.stride, .bw_gbs = p.packed_gbs};
    }
  }
  return best;
}

}  // namespace sandwich::tuner
