#pragma once
// A roofline latency simulator for service configurations.
//
// Every rank of a configuration runs the same tensor-parallel shard of each step at once. A
// rank's GEMMs take max(FLOPs / (its cores' peak x efficiency(m)), bytes / its bandwidth); its
// bandwidth is what its cores get when every active core of the configuration streams at the
// same time: a core draws at most core_bw, and each shared resource of the machine (a NUMA
// node's memory, optionally an L3 domain's link) splits its capacity, degraded when
// oversubscribed, among the active cores under it. A rank spanning NUMA nodes reads part of
// its memory remotely. Ranks meet in two all-reduces per layer (and a logits all-gather).
// Contention comes from the fundamental tree (the real resources) and from the machine's latent
// group, if calibration found one (MachineParams::latent_group): the cores of such a group share
// its capacity like a level_bw_gbs cap, whichever tree a configuration was cut from, so packing
// ranks into few latent groups costs bandwidth that spreading them does not (the paper's Figure
// 3a). The cap enters every GEMM's and pass's memory time, so it shows wherever a step is memory
// bound (decode; small prefill GEMMs). Other group levels a transform invented carry none.
//
// Prefill figure: mean latency to prefill one trace request on its own, in chunks. Decode
// figure: one decode step of decode_batch sequences at the trace's mean decode context, i.e.
// the time per output token.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/formats/model_config.h"
#include "topotree/topo_tree.h"
#include "tuner/evaluator.h"
#include "tuner/machine_params.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {

struct WorkloadOptions {
  int decode_batch = 1;         // sequences decoding together
  int prefill_chunk = 512;      // tokens of one prefill step
  double weight_bytes = 2;      // BF16 matrices
  double kv_bytes = 2;          // the engine's KV cache: BF16 (4 with --kv-cache-dtype float32)
  double activation_bytes = 4;  // all-reduce payload elements (f32)
};

// The speed of one rank of a configuration, with every rank running.
struct RankSpeed {
  int threads = 0;
  double gemm_gflops = 0;  // peak on the weight type, summed over its PUs
  double f32_gflops = 0;
  double bandwidth_gbs = 0;
  int numa_nodes = 1;  // NUMA nodes its CPUs span
  bool operator==(const RankSpeed&) const = default;
};

class LatencySimulator : public ConfigEvaluator {
 public:
  // machine: the fundamental tree (its resources); every CPU of a configuration must be in it.
  LatencySimulator(const topotree::TopoTree& machine, MachineParams params,
                   engine::ModelConfig model, RequestTrace trace, WorkloadOptions workload = {});

  std::string name() const override { return "latency simulator"; }
  Prediction evaluate(const topotree::ServiceConfig& config, Phase phase) override;
  bool cheap() const override { return true; }

  std::vector<RankSpeed> rank_speeds(const topotree::ServiceConfig& config) const;
  // One forward step: `tokens` new tokens over `seqs` sequences, attention over `attn_ctx`
  // cached+new positions per token on average (prefill passes the exact sums below).
  struct Step {
    int64_t tokens = 1, seqs = 1;
    double attn_flops = 0;  // whole model, one layer
    double kv_bytes = 0;    // whole model, one layer
    // A pipeline stage runs a range of the layers: how many (-1: all of them), and whether it
    // also computes the logits (the last stage).
    int layers = -1;
    bool head = true;
  };
  Prediction step_time(const topotree::ServiceConfig& config, const std::vector<RankSpeed>& speeds,
                       const Step& step) const;
  // The steps evaluate() times: one decode step of `batch` sequences at the trace's mean
  // decode context, and the chunks (of prefill_chunk tokens) that prefill a prompt of `input`.
  Step decode_step(int batch) const;
  std::vector<Step> prefill_steps(int64_t input) const;

  // The latent group term, for reports: which cores contend ("" when neutral), and the most
  // active cores a configuration puts in one latent group (0 when neutral).
  std::string latent_group_summary() const;
  int busiest_latent_group(const topotree::ServiceConfig& config) const;

  const MachineParams& params() const { return params_; }
  const WorkloadOptions& workload() const { return workload_; }
  const engine::ModelConfig& model() const { return model_; }
  const RequestTrace& trace() const { return trace_; }

 private:
  struct CpuInfo {
    int core = 0;  // physical core id
    int numa = 0;
    std::vector<int> capped;  // node index at each capped level
    int latent = -1;          // its latent group, if the machine has one
  };
  MachineParams params_;
  engine::ModelConfig model_;
  RequestTrace trace_;
  WorkloadOptions workload_;
  std::unordered_map<int, CpuInfo> cpus_;
  std::vector<double> capped_gbs_;  // capacity of a node of each capped level
  int n_cores_ = 0, n_numa_ = 0;
  std::vector<int> capped_nodes_;  // nodes per capped level
  int n_latent_ = 0;               // latent groups of the whole machine
  std::string latent_parent_;      // label of the level whose cores form latent groups
};

}  // namespace sandwich::tuner
