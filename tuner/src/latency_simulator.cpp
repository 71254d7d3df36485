#include "tuner/latency_simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace sandwich::tuner {
namespace {

// Bandwidth per active core from a resource of capacity `cap` shared by `cores` cores that
// would each draw `per_core` alone; oversubscription costs efficiency (see MachineParams).
double share(double cap, int cores, double per_core, double gamma) {
  const double demand = cores * per_core;
  if (demand <= cap) return per_core;
  return cap / (1 + gamma * (demand / cap - 1)) / cores;
}

}  // namespace

LatencySimulator::LatencySimulator(const topotree::TopoTree& machine, MachineParams params,
                                   engine::ModelConfig model, RequestTrace trace,
                                   WorkloadOptions workload)
    : params_(std::move(params)),
      model_(std::move(model)),
      trace_(std::move(trace)),
      workload_(workload) {
  params_.validate();
  model_.validate();
  if (trace_.requests.empty())
    throw std::invalid_argument("the simulator needs a non-empty request trace");
  if (workload_.decode_batch < 1 || workload_.prefill_chunk < 1)
    throw std::invalid_argument("decode batch and prefill chunk must be at least 1");
  const int cd = topotree::core_depth(machine);
  std::vector<int> capped_depth;
  for (const auto& [key, gbs] : params_.level_bw_gbs) {
    for (int d = machine.leaf_depth(); d >= 1; --d) {
      if (machine.level(d).label.find(key) != std::string::npos) {
        capped_depth.push_back(d);
        capped_gbs_.push_back(gbs);
        capped_nodes_.push_back(static_cast<int>(machine.nodes_at(d)));
        break;
      }
    }
  }
  // Latent groups tile the cores under each parent of the core level as group(cores, stride)
  // would: blocks of cores x stride consecutive cores, group j of a block holding j, j + stride...
  const LatentGroupParams& lg = params_.latent_group;
  const int per_parent = machine.level(cd).arity;
  if (lg.active()) {
    if (cd < 1)
      throw std::invalid_argument(
          "machine parameter latent_group groups cores, but this tree has no level above them");
    if (per_parent % (lg.cores * lg.stride) != 0)
      throw std::invalid_argument("machine parameter latent_group (" + lg.describe() +
                                  ") does not fit the " + std::to_string(per_parent) +
                                  " cores under each " + machine.level(cd - 1).label +
                                  ": cores x stride must divide " + std::to_string(per_parent));
    latent_parent_ = machine.level(cd - 1).label;
  }
  std::map<int, int> numa_index;
  const auto cpus = machine.cpus();
  const auto numa = machine.leaf_numa();
  for (size_t i = 0; i < cpus.size(); ++i) {
    CpuInfo info;
    info.core = static_cast<int>(static_cast<int64_t>(i) / machine.leaves_per_node(cd));
    info.numa = numa_index.emplace(numa[i], static_cast<int>(numa_index.size())).first->second;
    for (int d : capped_depth)
      info.capped.push_back(static_cast<int>(static_cast<int64_t>(i) / machine.leaves_per_node(d)));
    if (lg.active()) {
      const int pos = info.core % per_parent, parent = info.core / per_parent;
      info.latent = parent * (per_parent / lg.cores) + pos / (lg.cores * lg.stride) * lg.stride +
                    pos % lg.stride;
    }
    cpus_[cpus[i]] = std::move(info);
  }
  n_cores_ = static_cast<int>(machine.nodes_at(cd));
  n_numa_ = static_cast<int>(numa_index.size());
  if (lg.active()) n_latent_ = n_cores_ / lg.cores;
}

std::string LatencySimulator::latent_group_summary() const {
  if (!params_.latent_group.active()) return "";
  return params_.latent_group.describe() + " under each " + latent_parent_ + " (" +
         std::to_string(n_latent_) + " groups)";
}

int LatencySimulator::busiest_latent_group(const topotree::ServiceConfig& config) const {
  if (!params_.latent_group.active()) return 0;
  std::vector<std::vector<int>> cores(static_cast<size_t>(n_latent_));
  for (const auto& r : config.ranks)
    for (int cpu : r.cpus)
      if (auto it = cpus_.find(cpu); it != cpus_.end())
        cores[static_cast<size_t>(it->second.latent)].push_back(it->second.core);
  size_t most = 0;
  for (auto& c : cores) {
    std::sort(c.begin(), c.end());
    most = std::max<size_t>(most, static_cast<size_t>(std::unique(c.begin(), c.end()) - c.begin()));
  }
  return static_cast<int>(most);
}

std::vector<RankSpeed> LatencySimulator::rank_speeds(const topotree::ServiceConfig& config) const {
  std::vector<int> pus_on_core(static_cast<size_t>(n_cores_), 0);
  std::vector<const CpuInfo*> core_info(static_cast<size_t>(n_cores_), nullptr);
  for (const auto& r : config.ranks) {
    for (int cpu : r.cpus) {
      auto it = cpus_.find(cpu);
      if (it == cpus_.end())
        throw std::invalid_argument("CPU " + std::to_string(cpu) +
                                    " of the configuration is not in the machine's tree");
      ++pus_on_core[static_cast<size_t>(it->second.core)];
      core_info[static_cast<size_t>(it->second.core)] = &it->second;
    }
  }
  // Active cores under each shared resource.
  std::vector<int> numa_cores(static_cast<size_t>(n_numa_), 0);
  std::vector<std::vector<int>> capped_cores;
  for (int n : capped_nodes_) capped_cores.emplace_back(static_cast<size_t>(n), 0);
  std::vector<int> latent_cores(static_cast<size_t>(n_latent_), 0);
  for (int c = 0; c < n_cores_; ++c) {
    const CpuInfo* info = core_info[static_cast<size_t>(c)];
    if (!info) continue;
    ++numa_cores[static_cast<size_t>(info->numa)];
    if (info->latent >= 0) ++latent_cores[static_cast<size_t>(info->latent)];
    for (size_t l = 0; l < capped_cores.size(); ++l)
      ++capped_cores[l][static_cast<size_t>(info->capped[l])];
  }
  const MachineParams& p = params_;
  auto core_bandwidth = [&](const CpuInfo& info) {
    double bw = share(p.numa_bw_gbs, numa_cores[static_cast<size_t>(info.numa)], p.core_bw_gbs,
                      p.contention_gamma);
    for (size_t l = 0; l < capped_cores.size(); ++l)
      bw = std::min(bw, share(capped_gbs_[l], capped_cores[l][static_cast<size_t>(info.capped[l])],
                              p.core_bw_gbs, p.contention_gamma));
    if (info.latent >= 0)
      bw = std::min(bw, share(p.latent_group.bw_gbs, latent_cores[static_cast<size_t>(info.latent)],
                              p.core_bw_gbs, p.contention_gamma));
    return bw;
  };
  std::vector<RankSpeed> out;
  out.reserve(config.ranks.size());
  for (const auto& r : config.ranks) {
    RankSpeed s;
    s.threads = static_cast<int>(r.cpus.size());
    s.numa_nodes = std::max<int>(1, static_cast<int>(r.numa_nodes.size()));
    for (int cpu : r.cpus) {
      const CpuInfo& info = cpus_.at(cpu);
      const int on_core = pus_on_core[static_cast<size_t>(info.core)];
      const double smt = on_core > 1 ? p.smt_gain : 1.0;
      s.gemm_gflops += p.core_gflops * smt / on_core;
      s.f32_gflops += p.core_f32_gflops * smt / on_core;
      s.bandwidth_gbs += core_bandwidth(info) / on_core;
    }
    // Memory interleaved over k nodes: (k-1)/k of the reads are remote.
    const double k = s.numa_nodes;
    s.bandwidth_gbs /= (1 / k) + ((k - 1) / k) / p.remote_bw_factor;
    out.push_back(s);
  }
  return out;
}

Prediction LatencySimulator::step_time(const topotree::ServiceConfig& config,
                                       const std::vector<RankSpeed>& speeds,
                                       const Step& step) const {
  const MachineParams& p = params_;
  const engine::ModelConfig& m = model_;
  const double R = config.rank_count();
  const double M = static_cast<double>(step.tokens);
  const double dim = m.dim, q_dim = static_cast<double>(m.q_dim()),
               kv_dim = static_cast<double>(m.kv_dim());
  const double ffn = m.ffn_dim, vocab = m.vocab_size;
  // All-reduce through shared memory: each rank reads 2 (R-1)/R of the message from the
  // others' buffers. Ranks on different NUMA nodes read over the interconnect, whose per-node
  // bandwidth the ranks of a node share.
  std::map<int, int> ranks_on_node;
  for (const auto& r : config.ranks)
    for (int n : r.numa_nodes) ++ranks_on_node[n];
  int most_on_a_node = 1;
  for (const auto& [node, count] : ranks_on_node) most_on_a_node = std::max(most_on_a_node, count);
  const bool cross_numa = ranks_on_node.size() > 1;
  const double ar_gbs =
      cross_numa ? std::min(p.allreduce_gbs, p.interconnect_gbs / most_on_a_node) : p.allreduce_gbs;
  const double ar_alpha_s = R > 1 ? p.allreduce_alpha_us * 1e-6 * (1 + std::log2(R)) : 0;

  Prediction worst;
  worst.ms = -1;
  // Ranks are usually alike; evaluate each distinct speed once.
  std::vector<RankSpeed> distinct;
  for (const auto& s : speeds)
    if (std::find(distinct.begin(), distinct.end(), s) == distinct.end()) distinct.push_back(s);
  for (const RankSpeed& s : distinct) {
    Prediction pr;
    const double span = s.numa_nodes;
    const double sync_s =
        (p.team_sync_us + p.team_sync_log2_us * std::log2(std::max(1, s.threads))) * 1e-6 /
        (span > 1 ? p.remote_bw_factor : 1.0);
    const double bw = s.bandwidth_gbs * 1e9;
    double compute = 0, memory = 0, comm = 0, sync = 0;
    auto roofline = [&](double flops, double rate, double bytes) {
      const double tc = flops / rate, tm = bytes / bw;
      (tc >= tm ? compute : memory) += std::max(tc, tm);
      sync += sync_s;
    };
    auto gemm = [&](double rows, double k, double n) {
      const double e = p.gemm_efficiency * rows / (rows + p.gemm_m_half);
      roofline(2 * rows * k * n, s.gemm_gflops * 1e9 * e,
               k * n * workload_.weight_bytes + rows * (k + n) * 4);
    };
    // One layer.
    gemm(M, dim, (q_dim + 2 * kv_dim) / R);
    gemm(M, q_dim / R, dim);
    gemm(M, dim, 2 * ffn / R);
    gemm(M, ffn / R, dim);
    roofline(step.attn_flops / R, s.f32_gflops * 1e9 * p.attention_efficiency,
             step.kv_bytes / R + M * (q_dim + 2 * kv_dim) / R * 4);
    // Norms, RoPE, residuals, SiLU*mul: a few passes over the activations, replicated per rank.
    memory += M * (6 * dim + 2 * ffn / R) * 4 / bw;
    sync += 3 * sync_s;
    if (R > 1)
      comm += 2 * (ar_alpha_s +
                   2 * (R - 1) / R * M * dim * workload_.activation_bytes / (ar_gbs * 1e9));
    if (span > 1) {
      // A rank over several NUMA nodes: every activation one node's threads write, the others
      // read (layer input and norm, q/k/v, attention output, o, gate/up, SiLU*mul, down).
      const double width = 3 * dim + (q_dim + 2 * kv_dim) / R + q_dim / R + 3 * ffn / R;
      comm += M * width * 4 * (span - 1) / span / (p.interconnect_gbs * 1e9);
    }
    const double layers = step.layers < 0 ? m.n_layers : step.layers;
    compute *= layers, memory *= layers, comm *= layers, sync *= layers;
    if (step.head) {
      // Logits of the last token of each sequence, sharded by vocabulary, then gathered.
      const double seqs = static_cast<double>(step.seqs);
      gemm(seqs, dim, vocab / R);
      if (R > 1) comm += ar_alpha_s + (R - 1) / R * seqs * vocab * 4 / (ar_gbs * 1e9);
    }
    pr.compute_ms = compute * 1e3;
    pr.memory_ms = memory * 1e3;
    pr.communication_ms = comm * 1e3;
    pr.sync_ms = sync * 1e3;
    pr.ms = pr.compute_ms + pr.memory_ms + pr.communication_ms + pr.sync_ms;
    if (pr.ms > worst.ms) worst = pr;
  }
  return worst;
}

LatencySimulator::Step LatencySimulator::decode_step(int batch) const {
  const engine::ModelConfig& m = model_;
  const double hd = m.head_dim, heads = m.n_heads, kv_dim = static_cast<double>(m.kv_dim());
  const double b = batch, ctx = trace_.mean_decode_context() + 1;
  return Step{.tokens = batch,
              .seqs = batch,
              .attn_flops = b * 4 * hd * heads * ctx,
              .kv_bytes = b * 2 * ctx * kv_dim * workload_.kv_bytes};
}

std::vector<LatencySimulator::Step> LatencySimulator::prefill_steps(int64_t input) const {
  const engine::ModelConfig& m = model_;
  const double hd = m.head_dim, heads = m.n_heads, kv_dim = static_cast<double>(m.kv_dim());
  std::vector<Step> out;
  int64_t done = 0;
  while (done < input) {
    const int64_t chunk = std::min<int64_t>(workload_.prefill_chunk, input - done);
    const double c0 = static_cast<double>(done), n = static_cast<double>(chunk);
    out.push_back(Step{.tokens = chunk,
                       .seqs = 1,
                       .attn_flops = 4 * hd * heads * (n * c0 + n * (n + 1) / 2),
                       .kv_bytes = 2 * (c0 + n) * kv_dim * workload_.kv_bytes});
    done += chunk;
  }
  return out;
}

Prediction LatencySimulator::evaluate(const topotree::ServiceConfig& config, Phase phase) {
  const std::vector<RankSpeed> speeds = rank_speeds(config);
  auto add = [](Prediction& total, const Prediction& p) {
    total.ms += p.ms;
    total.compute_ms += p.compute_ms;
    total.memory_ms += p.memory_ms;
    total.communication_ms += p.communication_ms;
    total.sync_ms += p.sync_ms;
  };
  Prediction total;
  total.ms = 0;
  if (phase == Phase::Decode) return step_time(config, speeds, decode_step(workload_.decode_batch));
  for (const auto& r : trace_.requests)
    for (const Step& s : prefill_steps(r.input)) add(total, step_time(config, speeds, s));
  const double n = static_cast<double>(trace_.requests.size());
  total.ms /= n, total.compute_ms /= n, total.memory_ms /= n, total.communication_ms /= n,
      total.sync_ms /= n;
  return total;
}

}  // namespace sandwich::tuner
