#pragma once
// Calibrating the latency simulator on this machine with short probes (about a second in all;
// a few more where a dozen latent group candidates each stream twice):
//   read bandwidth   a streaming read of a private buffer per thread, 1..N cores of NUMA node 0
//   FP32 FMA peak    one core, independent FMA chains (AVX-512 or AVX2)
//   BF16 dot peak    one core, vdpbf16ps chains (where the CPU has AVX512_BF16)
//   GEMM efficiency  the kernels' own BF16 GEMM on one core, at a small and a large m
//   team sync        cost of one empty parallel region of a pinned thread team, 1..N threads
//   latent groups    read bandwidth of cores packed into a candidate group vs spread over the
//                    groups (latent_group_probe.h), for a shared resource the tree lacks
// and turning the figures into MachineParams. Results are cached per CPU model and CPU list.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "topotree/topo_tree.h"
#include "tuner/latent_group_probe.h"
#include "tuner/machine_params.h"

namespace sandwich::tuner {

struct CalibrationOptions {
  int max_threads = 0;                   // 0: every core of the first NUMA node
  size_t bytes_per_thread = 128u << 20;  // bandwidth buffer; well beyond an L3 slice
  double seconds_per_probe = 0.05;       // compute loops run at least this long
};

struct Calibration {
  std::string cpu;               // model name
  std::vector<int> cpus;         // the cores probed (one PU each), in order
  std::vector<double> read_gbs;  // [i]: i+1 threads streaming together
  double fma_f32_gflops = 0;     // one core
  double bf16_gflops = 0;        // one core; 0 if the CPU has no BF16 dot product
  int gemm_m_small = 4, gemm_m_large = 128;
  double gemm_gflops_small = 0, gemm_gflops_large = 0;  // one core, kernels' BF16 GEMM
  std::vector<double> team_region_us;                   // [i]: one empty region of i+1 threads
  // Candidates measured; empty when none applies (or in a record cached before the probe).
  std::vector<LatentGroupProbe> latent_groups;
  double seconds = 0;  // the calibration's own run time
  // The link to the other nodes of an MPI hostfile (link_probe.h), when one was measured: one-way
  // latency of small messages and bandwidth of large ones. 0: not measured.
  double link_latency_us = 0, link_gbs = 0;
  std::string link_hostfile, link_hosts;

  nlohmann::json to_json() const;
  static Calibration from_json(const nlohmann::json& j);
  // The simulator's parameters: measured where a probe exists, documented defaults elsewhere.
  MachineParams params() const;
};

// Runs every probe on this machine (local: its fundamental tree, from load_topology("")).
Calibration calibrate_this_machine(const topotree::TopoTree& local,
                                   const CalibrationOptions& options = {});

// Single probes, for tests and for the report. Each reports its best repetition, since other
// processes on a shared machine can only slow a probe down.
double probe_read_bandwidth_gbs(const std::vector<int>& cpus, size_t bytes_per_thread,
                                int repeats = 5);
double probe_fma_f32_gflops(double seconds);
double probe_bf16_dot_gflops(double seconds);  // 0 without AVX512_BF16
double probe_gemm_gflops(int m, int n, int k, int cpu, double seconds);
double probe_team_region_us(const std::vector<int>& cpus, int regions = 20000);

// Writes `c` as this machine's cached calibration; returns the file.
std::filesystem::path save_calibration(const topotree::TopoTree& local, const Calibration& c);

// Records a link measured to the nodes of `hostfile` (link_probe.h) in this machine's cached
// calibration, calibrating first if none is cached; returns the file.
std::filesystem::path record_link(const topotree::TopoTree& local, double latency_us, double gbs,
                                  const std::string& hostfile, const std::string& hosts);

// The cached calibration of this machine, if one is cached and readable; never measures.
std::optional<Calibration> cached_calibration(const topotree::TopoTree& local,
                                              std::filesystem::path* cache_file = nullptr);
// The cached calibration of this machine ($XDG_CACHE_HOME or ~/.cache /sandwich/), measured
// now if absent or if `recalibrate`; `cache_file` says where it lives.
Calibration local_calibration(const topotree::TopoTree& local, bool recalibrate,
                              std::filesystem::path* cache_file = nullptr);

}  // namespace sandwich::tuner
