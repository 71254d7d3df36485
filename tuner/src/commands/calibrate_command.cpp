#include "tuner/commands/calibrate_command.h"

#include <filesystem>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/cpu_list.h"
#include "topotree/hwloc_loader.h"
#include "tuner/calibration.h"
#include "tuner/link_probe.h"

namespace sandwich::tuner {

std::string calibration_report(const CalibrateRequest& r) {
  const topotree::LoadedTopology& local = topotree::this_machine();
  std::filesystem::path cache;
  Calibration c = local_calibration(local.tree, r.recalibrate, &cache);
  if (!r.hostfile.empty()) {
    const LinkMeasurement m = measure_link(r.hostfile);
    const std::string hosts = m.hosts.size() == 2 ? m.hosts[0] + " <-> " + m.hosts[1] : "";
    cache = record_link(local.tree, m.latency_us, m.gbs, r.hostfile, hosts);
    c = local_calibration(local.tree, false);
  }
  const MachineParams params = c.params();
  if (r.json)
    return nlohmann::json{{"calibration", c.to_json()},
                          {"params", params.to_json()},
                          {"cache", cache.string()}}
               .dump(2) +
           "\n";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  os << "cpu            " << c.cpu << " (probed CPUs " << format_cpu_list(c.cpus) << ")\n";
  os << "read bandwidth";
  for (size_t i = 0; i < c.read_gbs.size(); ++i)
    os << "  " << i + 1 << " core" << (i ? "s " : " ") << c.read_gbs[i] << " GB/s";
  os << "\nFP32 FMA peak  " << c.fma_f32_gflops << " GFLOP/s per core\n";
  os << "BF16 dot peak  "
     << (c.bf16_gflops > 0 ? std::to_string(c.bf16_gflops) + " GFLOP/s per core"
                           : "none (no AVX512_BF16)")
     << "\n";
  os << "GEMM 1 core    m=" << c.gemm_m_small << ": " << c.gemm_gflops_small
     << " GFLOP/s, m=" << c.gemm_m_large << ": " << c.gemm_gflops_large
     << " GFLOP/s (n = k = 1024)\n";
  os << "team region   ";
  for (size_t i = 0; i < c.team_region_us.size(); ++i)
    os << "  " << i + 1 << " thread" << (i ? "s " : " ") << c.team_region_us[i] << " us";
  os << "\nlatent groups ";
  if (c.latent_groups.empty())
    os << " no candidate (no parent of the cores holds enough of them to group)";
  for (const auto& g : c.latent_groups)
    os << "\n  group(" << g.cores << "," << g.stride << ")  packed " << format_cpu_list(g.packed)
       << ": " << g.packed_gbs << " GB/s, spread " << format_cpu_list(g.spread) << ": "
       << g.spread_gbs << " GB/s (ratio " << (g.spread_gbs > 0 ? g.packed_gbs / g.spread_gbs : 0)
       << ")";
  os << "\n  -> " << params.latent_group.describe();
  os << "\nlink           ";
  if (c.link_gbs > 0)
    os << c.link_latency_us << " us one way, " << c.link_gbs << " GB/s (MPI ping-pong "
       << c.link_hosts << ", hostfile " << c.link_hostfile << ")";
  else
    os << "not measured (calibrate --hostfile H measures it over MPI)";
  os << "\nprobe time     " << c.seconds << " s; cached in " << cache.string()
     << "\n\nsimulator parameters:\n"
     << params.to_json().dump(2) << "\n";
  return os.str();
}

}  // namespace sandwich::tuner
