#include "tuner/machine_params.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sandwich::tuner {
namespace {

// Every scalar field once, so to_json and from_json cannot drift apart.
template <class F>
void for_each_scalar(MachineParams& p, F&& f) {
  f("core_gflops", p.core_gflops);
  f("core_f32_gflops", p.core_f32_gflops);
  f("gemm_efficiency", p.gemm_efficiency);
  f("gemm_m_half", p.gemm_m_half);
  f("attention_efficiency", p.attention_efficiency);
  f("smt_gain", p.smt_gain);
  f("core_bw_gbs", p.core_bw_gbs);
  f("numa_bw_gbs", p.numa_bw_gbs);
  f("remote_bw_factor", p.remote_bw_factor);
  f("interconnect_gbs", p.interconnect_gbs);
  f("contention_gamma", p.contention_gamma);
  f("team_sync_us", p.team_sync_us);
  f("team_sync_log2_us", p.team_sync_log2_us);
  f("allreduce_alpha_us", p.allreduce_alpha_us);
  f("allreduce_gbs", p.allreduce_gbs);
}

LatentGroupParams latent_group_from_json(const nlohmann::json& j, const std::string& where) {
  LatentGroupParams g;
  if (j.is_null()) return g;
  const std::string field = where + ": latent_group";
  if (!j.is_object())
    throw std::invalid_argument(field + " must be null or {\"cores\": N, \"stride\": T, " +
                                "\"bw_gbs\": GB/s}");
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number()) throw std::invalid_argument(field + "." + key + " must be a number");
    if (key == "bw_gbs") {
      g.bw_gbs = value.get<double>();
    } else if (key == "cores" || key == "stride") {
      if (!value.is_number_integer())
        throw std::invalid_argument(field + "." + key + " must be a whole number");
      (key == "cores" ? g.cores : g.stride) = value.get<int>();
    } else {
      throw std::invalid_argument(field + ": unknown key '" + key + "' (cores, stride, bw_gbs)");
    }
  }
  return g;
}

}  // namespace

std::string LatentGroupParams::describe() const {
  if (!active()) return "none";
  std::ostringstream os;
  os << "groups of " << cores << " cores (stride " << stride << "), " << std::fixed
     << std::setprecision(1) << bw_gbs << " GB/s each";
  return os.str();
}

nlohmann::json MachineParams::to_json() const {
  nlohmann::json j;
  MachineParams copy = *this;
  for_each_scalar(copy, [&j](const char* name, double& v) { j[name] = v; });
  j["level_bw_gbs"] = level_bw_gbs;
  if (latent_group.active())
    j["latent_group"] = {{"cores", latent_group.cores},
                         {"stride", latent_group.stride},
                         {"bw_gbs", latent_group.bw_gbs}};
  j["source"] = source;
  return j;
}

MachineParams MachineParams::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw std::invalid_argument(where + ": machine parameters must be a JSON object");
  MachineParams p;
  std::map<std::string, double*> fields;
  for_each_scalar(p, [&fields](const char* name, double& v) { fields[name] = &v; });
  for (const auto& [key, value] : j.items()) {
    if (key == "source") {
      p.source = value.get<std::string>();
    } else if (key == "level_bw_gbs") {
      if (!value.is_object())
        throw std::invalid_argument(where + ": level_bw_gbs must map level names to GB/s");
      for (const auto& [level, gbs] : value.items()) {
        if (!gbs.is_number())
          throw std::invalid_argument(where + ": level_bw_gbs." + level + " must be a number");
        p.level_bw_gbs[level] = gbs.get<double>();
      }
    } else if (key == "latent_group") {
      p.latent_group = latent_group_from_json(value, where);
    } else if (auto it = fields.find(key); it != fields.end()) {
      if (!value.is_number()) throw std::invalid_argument(where + ": " + key + " must be a number");
      *it->second = value.get<double>();
    } else {
      throw std::invalid_argument(where + ": unknown machine parameter '" + key + "'");
    }
  }
  p.validate();
  return p;
}

void MachineParams::validate() const {
  MachineParams copy = *this;
  for_each_scalar(copy, [](const char* name, double& v) {
    if (!std::isfinite(v) || v < 0)
      throw std::invalid_argument(std::string("machine parameter ") + name + " must be >= 0");
  });
  auto positive = [](const char* name, double v) {
    if (v <= 0)
      throw std::invalid_argument(std::string("machine parameter ") + name + " must be > 0");
  };
  positive("core_gflops", core_gflops);
  positive("core_f32_gflops", core_f32_gflops);
  positive("gemm_efficiency", gemm_efficiency);
  positive("attention_efficiency", attention_efficiency);
  positive("core_bw_gbs", core_bw_gbs);
  positive("numa_bw_gbs", numa_bw_gbs);
  positive("remote_bw_factor", remote_bw_factor);
  positive("allreduce_gbs", allreduce_gbs);
  positive("interconnect_gbs", interconnect_gbs);
  positive("smt_gain", smt_gain);
  if (gemm_efficiency > 1 || attention_efficiency > 1)
    throw std::invalid_argument(
        "machine parameters gemm_efficiency and attention_efficiency are fractions of peak (<= 1)");
  for (const auto& [level, gbs] : level_bw_gbs)
    if (!(gbs > 0)) throw std::invalid_argument("level_bw_gbs." + level + " must be > 0");
  const LatentGroupParams& g = latent_group;
  if (g.cores != 0 && (g.cores < 2 || g.stride < 1 || !std::isfinite(g.bw_gbs) || !(g.bw_gbs > 0)))
    throw std::invalid_argument(
        "machine parameter latent_group needs cores >= 2 (0: none), stride >= 1 and bw_gbs > 0");
}

}  // namespace sandwich::tuner
