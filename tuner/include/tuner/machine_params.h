#pragma once
// What the latency simulator needs to know about a machine's speed: per-core compute, memory
// bandwidth and how it is shared, synchronisation costs. Measured on this machine by
// calibration.h, or taken from a topology descriptor's published specs.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace sandwich::tuner {

// Cores that share a resource no level of the tree shows (an L3 tag, a cluster's link to the
// ring): within each parent of the core level, the groups of `cores` cores that the group
// transform group(cores, stride, core depth) would invent. Each group delivers at most bw_gbs to
// its active cores, shared like a level_bw_gbs cap. cores == 0: no such resource (neutral).
struct LatentGroupParams {
  int cores = 0;
  int stride = 1;
  double bw_gbs = 0;
  bool active() const { return cores > 0; }
  bool operator==(const LatentGroupParams&) const = default;
  // "groups of 4 cores (stride 1), 30.0 GB/s each"; "none" when inactive.
  std::string describe() const;
};

struct MachineParams {
  // Compute. GEMM rate of one core on the weight type (BF16 dot products where the core has
  // them, else FP32 FMA after conversion), and FP32 FMA rate (attention), in GFLOP/s at peak.
  double core_gflops = 50;
  double core_f32_gflops = 50;
  // Fraction of peak a large GEMM reaches, and the rows m at which it reaches half of that
  // (small-m GEMMs leave register tiles partly empty): eff(m) = gemm_efficiency * m / (m + m_half).
  double gemm_efficiency = 0.7;
  double gemm_m_half = 4;
  double attention_efficiency = 0.3;  // of the FP32 peak
  double smt_gain = 1.0;              // throughput of a core with all its PUs busy, relative to one
  // Memory. Read bandwidth one core can draw alone, and one NUMA node's memory can deliver.
  double core_bw_gbs = 15;
  double numa_bw_gbs = 80;
  double remote_bw_factor = 0.5;  // bandwidth of reads from another NUMA node, relative to local
  // Bandwidth between NUMA nodes (per node, each direction): what a rank spanning nodes moves
  // its activations over, since threads on one node consume what threads on another produced.
  double interconnect_gbs = 40;
  // Oversubscribed memory loses efficiency (row-buffer conflicts, queueing): with demand D over
  // capacity C, the delivered bandwidth is C / (1 + gamma * (D / C - 1)).
  double contention_gamma = 0.05;
  // Extra bandwidth caps per node of a level whose label contains the key ("L3": a CCX's link).
  std::map<std::string, double> level_bw_gbs;
  // A latent shared resource found by calibration (calibration.h); JSON "latent_group", absent
  // or null when none.
  LatentGroupParams latent_group;
  // Synchronisation. One parallel region of T threads in a rank costs a + b log2 T (us), and
  // 1 / remote_bw_factor times that when the threads span NUMA nodes (cache lines travel further).
  double team_sync_us = 0.5;
  double team_sync_log2_us = 0.3;
  // One all-reduce between R ranks costs alpha (1 + log2 R) us plus its bytes moved at
  // allreduce_gbs per rank (2 (R-1)/R of the message through shared memory); across NUMA nodes
  // at most the node's interconnect_gbs shared by the ranks on that node.
  double allreduce_alpha_us = 4;
  double allreduce_gbs = 20;

  std::string source = "generic defaults";  // where the figures come from

  nlohmann::json to_json() const;
  // Unknown keys are an error (a typo would otherwise silently keep a default).
  static MachineParams from_json(const nlohmann::json& j, const std::string& where);
  void validate() const;  // throws std::invalid_argument naming the bad field
};

}  // namespace sandwich::tuner
