// Calibration of the latency simulator on this machine (probes in calibration_probes.cpp).
#include "tuner/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/cpu_list.h"
#include "common/json_file.h"
#include "common/paths.h"

namespace sandwich::tuner {
namespace fs = std::filesystem;
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// One PU of each core of the first NUMA node, in tree order.
std::vector<int> probe_cpus(const topotree::TopoTree& t, int max_threads) {
  const int cd = topotree::core_depth(t);
  const int first_numa = t.leaf_numa()[0];
  std::vector<int> out;
  for (int64_t c = 0; c < t.nodes_at(cd); ++c) {
    const auto cpus = t.node_cpus(cd, c);
    if (t.node_numa(cd, c) != first_numa) continue;
    out.push_back(cpus[0]);
    if (max_threads > 0 && static_cast<int>(out.size()) >= max_threads) break;
  }
  return out;
}

}  // namespace

nlohmann::json Calibration::to_json() const {
  nlohmann::json latent = nlohmann::json::array();
  for (const auto& p : latent_groups) latent.push_back(p.to_json());
  nlohmann::json j = {{"cpu", cpu},
                      {"cpus", cpus},
                      {"read_gbs", read_gbs},
                      {"fma_f32_gflops", fma_f32_gflops},
                      {"bf16_gflops", bf16_gflops},
                      {"gemm_m_small", gemm_m_small},
                      {"gemm_m_large", gemm_m_large},
                      {"gemm_gflops_small", gemm_gflops_small},
                      {"gemm_gflops_large", gemm_gflops_large},
                      {"team_region_us", team_region_us},
                      {"latent_groups", latent},
                      {"seconds", seconds}};
  if (link_gbs > 0) {
    j["link_latency_us"] = link_latency_us;
    j["link_gbs"] = link_gbs;
    j["link_hostfile"] = link_hostfile;
    j["link_hosts"] = link_hosts;
  }
  return j;
}

Calibration Calibration::from_json(const nlohmann::json& j) {
  Calibration c;
  c.cpu = j.at("cpu").get<std::string>();
  c.cpus = j.at("cpus").get<std::vector<int>>();
  c.read_gbs = j.at("read_gbs").get<std::vector<double>>();
  c.fma_f32_gflops = j.at("fma_f32_gflops").get<double>();
  c.bf16_gflops = j.at("bf16_gflops").get<double>();
  c.gemm_m_small = j.at("gemm_m_small").get<int>();
  c.gemm_m_large = j.at("gemm_m_large").get<int>();
  c.gemm_gflops_small = j.at("gemm_gflops_small").get<double>();
  c.gemm_gflops_large = j.at("gemm_gflops_large").get<double>();
  c.team_region_us = j.at("team_region_us").get<std::vector<double>>();
  c.seconds = j.value("seconds", 0.0);
  c.link_latency_us = j.value("link_latency_us", 0.0);
  c.link_gbs = j.value("link_gbs", 0.0);
  c.link_hostfile = j.value("link_hostfile", "");
  c.link_hosts = j.value("link_hosts", "");
  if (j.contains("latent_groups"))
    for (const auto& p : j.at("latent_groups"))
      c.latent_groups.push_back(LatentGroupProbe::from_json(p));
  if (c.read_gbs.empty() || c.team_region_us.empty() || c.fma_f32_gflops <= 0)
    throw std::invalid_argument("incomplete calibration record");
  return c;
}

MachineParams Calibration::params() const {
  MachineParams p;  // defaults stand where no probe measures the figure (see MachineParams)
  p.core_f32_gflops = fma_f32_gflops;
  p.core_gflops = bf16_gflops > 0 ? bf16_gflops : fma_f32_gflops;
  // eff(m) = E m / (m + h) through the two GEMM points.
  const double e1 = gemm_gflops_small / p.core_gflops, e2 = gemm_gflops_large / p.core_gflops;
  const double m1 = gemm_m_small, m2 = gemm_m_large, r = e2 > 0 ? e1 / e2 : 1;
  double h = r * m2 - m1 > 0 ? m1 * m2 * (1 - r) / (r * m2 - m1) : 0;
  h = std::clamp(h, 0.0, 64.0);
  p.gemm_m_half = h;
  p.gemm_efficiency = std::clamp(e2 * (m2 + h) / m2, 0.05, 1.0);
  // Bandwidth: one core alone; the node is at least what all probed cores drew together.
  p.core_bw_gbs = read_gbs.front();
  const auto peak = std::max_element(read_gbs.begin(), read_gbs.end());
  p.numa_bw_gbs = *peak;
  // If more cores drew less than fewer did, the drop measures the contention penalty.
  const double n_last = static_cast<double>(read_gbs.size()), last = read_gbs.back();
  const double demand = n_last * p.core_bw_gbs;
  if (last < *peak * 0.98 && demand > *peak)
    p.contention_gamma = std::clamp((*peak / last - 1) / (demand / *peak - 1), 0.0, 1.0);
  p.team_sync_us = team_region_us.front();
  if (team_region_us.size() >= 2)
    p.team_sync_log2_us = std::max(0.0, (team_region_us.back() - team_region_us.front()) /
                                            std::log2(static_cast<double>(team_region_us.size())));
  p.latent_group = latent_group_from_probes(latent_groups);
  p.source = "calibrated on this machine (" + cpu + ")";
  return p;
}

Calibration calibrate_this_machine(const topotree::TopoTree& local, const CalibrationOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Calibration c;
  c.cpu = cpu_model_name();
  c.cpus = probe_cpus(local, o.max_threads);
  for (size_t n = 1; n <= c.cpus.size(); ++n) {
    const std::vector<int> use(c.cpus.begin(), c.cpus.begin() + static_cast<long>(n));
    c.read_gbs.push_back(probe_read_bandwidth_gbs(use, o.bytes_per_thread));
    c.team_region_us.push_back(probe_team_region_us(use));
  }
  c.latent_groups = latent_group_candidates(local, o.max_threads);
  // A dozen candidates on a large machine: a quarter of the buffer each (at least two cores, so
  // 64 MiB by default, still past the L3 a group of cores shares).
  measure_latent_groups(c.latent_groups, o.bytes_per_thread / 4);
  c.fma_f32_gflops = probe_fma_f32_gflops(o.seconds_per_probe);
  c.bf16_gflops = probe_bf16_dot_gflops(o.seconds_per_probe);
  c.gemm_gflops_small =
      probe_gemm_gflops(c.gemm_m_small, 1024, 1024, c.cpus[0], o.seconds_per_probe);
  c.gemm_gflops_large =
      probe_gemm_gflops(c.gemm_m_large, 1024, 1024, c.cpus[0], o.seconds_per_probe);
  if (c.fma_f32_gflops <= 0) {
    // No AVX2/AVX-512: the GEMM itself is the best measure of the core's rate.
    c.fma_f32_gflops = c.gemm_gflops_large;
  }
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

namespace {

// One file per CPU model and CPU list.
fs::path calibration_cache_file(const topotree::TopoTree& local) {
  const std::string key = cpu_model_name() + "|" + format_cpu_list(local.cpus());
  return user_cache_dir() /
         ("calibration-" + std::to_string(std::hash<std::string>{}(key) % 1000000007) + ".json");
}

}  // namespace

std::optional<Calibration> cached_calibration(const topotree::TopoTree& local,
                                              fs::path* cache_file) {
  const fs::path file = calibration_cache_file(local);
  if (cache_file) *cache_file = file;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  try {
    return Calibration::from_json(read_json_file(file, file_kinds::kCalibration));
  } catch (const std::exception&) {
    return std::nullopt;  // a stale or damaged cache counts as none
  }
}

Calibration local_calibration(const topotree::TopoTree& local, bool recalibrate,
                              fs::path* cache_file) {
  if (!recalibrate)
    if (std::optional<Calibration> c = cached_calibration(local, cache_file)) return *c;
  const fs::path file = calibration_cache_file(local);
  if (cache_file) *cache_file = file;
  Calibration c = calibrate_this_machine(local);
  save_calibration(local, c);
  return c;
}

fs::path save_calibration(const topotree::TopoTree& local, const Calibration& c) {
  const fs::path file = calibration_cache_file(local);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  if (out) out << c.to_json().dump(2) << "\n";
  return file;
}

fs::path record_link(const topotree::TopoTree& local, double latency_us, double gbs,
                     const std::string& hostfile, const std::string& hosts) {
  Calibration c = local_calibration(local, false);
  c.link_latency_us = latency_us;
  c.link_gbs = gbs;
  c.link_hostfile = fs::absolute(hostfile).string();
  c.link_hosts = hosts;
  return save_calibration(local, c);
}

}  // namespace sandwich::tuner
