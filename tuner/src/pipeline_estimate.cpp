#include "tuner/pipeline_estimate.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace sandwich::tuner {

std::vector<int> balanced_layer_split(int layers, int stages, double layer_cost, double head_cost) {
  if (stages < 1) throw std::invalid_argument("a pipeline needs at least one stage");
  if (stages > layers)
    throw std::invalid_argument("a pipeline of " + std::to_string(stages) +
                                " stages needs at least as many layers; the model has " +
                                std::to_string(layers));
  if (stages == 1) return {layers};
  // The last stage carries the head: try every layer count for it and spread the rest evenly.
  // Ties go to the count nearest an even share of the whole time.
  const double ideal =
      layer_cost > 0 ? ((layers * layer_cost + head_cost) / stages - head_cost) / layer_cost : 1;
  int best_last = 1;
  double best = std::numeric_limits<double>::infinity();
  for (int last = 1; last <= layers - (stages - 1); ++last) {
    const int rest = layers - last, per = (rest + stages - 2) / (stages - 1);
    const double slowest = std::max(per * layer_cost, last * layer_cost + head_cost);
    if (slowest < best || (slowest == best && std::abs(last - ideal) < std::abs(best_last - ideal)))
      best = slowest, best_last = last;
  }
  std::vector<int> out(static_cast<size_t>(stages), 0);
  const int rest = layers - best_last;
  for (int i = 0; i < stages - 1; ++i) out[static_cast<size_t>(i)] = rest / (stages - 1);
  for (int i = 0; i < rest % (stages - 1); ++i) ++out[static_cast<size_t>(i)];
  out.back() = best_last;
  return out;
}

PipelineTiming pipeline_timing(const std::vector<double>& stage_s, double hop_s,
                               int micro_batches) {
  if (stage_s.empty()) throw std::invalid_argument("a pipeline needs at least one stage");
  if (micro_batches < 1) throw std::invalid_argument("micro-batches must be at least 1");
  const double p = static_cast<double>(stage_s.size()), m = micro_batches;
  const double hop = stage_s.size() > 1 ? hop_s : 0;
  const double sum = std::accumulate(stage_s.begin(), stage_s.end(), 0.0);
  const double slowest = *std::max_element(stage_s.begin(), stage_s.end());
  PipelineTiming t;
  t.latency_s = sum + (p - 1) * hop;
  t.period_s = std::max(slowest, hop);
  t.step_s = (m + p - 1) * (slowest + hop);
  t.utilization = t.step_s > 0 ? m * sum / (p * t.step_s) : 0;
  return t;
}

ModelWeightBytes model_weight_bytes(const engine::ModelConfig& m, double bytes_per_weight) {
  const double dim = m.dim, q = static_cast<double>(m.q_dim()),
               kv = static_cast<double>(m.kv_dim());
  const double matrix = m.vocab_size * dim * bytes_per_weight;
  ModelWeightBytes b;
  // The norms stay in f32 (two per layer, one before the head).
  b.layer = (dim * (q + 2 * kv) + q * dim + 3 * dim * m.ffn_dim) * bytes_per_weight + 2 * dim * 4;
  b.embedding = matrix;
  b.head = matrix + dim * 4;
  return b;
}

std::string PipelineEstimate::split_text() const {
  std::string s;
  for (const auto& st : split) {
    if (!s.empty()) s += '+';
    s += std::to_string(st.layers);
  }
  return s;
}

namespace {

// One stage's share of a step: its layers, and the logits on the last.
double stage_seconds(const LatencySimulator& node, const topotree::ServiceConfig& config,
                     const std::vector<RankSpeed>& speeds, LatencySimulator::Step step,
                     const PipelineStage& stage) {
  step.layers = stage.layers;
  step.head = stage.head;
  return node.step_time(config, speeds, step).ms * 1e-3;
}

std::vector<double> stage_times(const LatencySimulator& node, const topotree::ServiceConfig& config,
                                const std::vector<RankSpeed>& speeds,
                                const LatencySimulator::Step& step,
                                const std::vector<PipelineStage>& split) {
  std::vector<double> out;
  for (const auto& st : split) out.push_back(stage_seconds(node, config, speeds, step, st));
  return out;
}

std::string gb(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << bytes / 1e9 << " GB";
  return os.str();
}

}  // namespace

PipelineEstimate estimate_pipeline(const LatencySimulator& node,
                                   const topotree::ServiceConfig& prefill,
                                   const topotree::ServiceConfig& decode,
                                   const PipelineOptions& o) {
  const engine::ModelConfig& m = node.model();
  const int P = o.stages;
  if (o.decode_batches.empty()) throw std::invalid_argument("no decode batch to estimate");
  PipelineEstimate e;
  e.stages = P;
  e.prefill = prefill;
  e.decode = decode;
  const double hidden_bytes = m.dim * 4.0;  // one token's hidden state, f32

  // The split: balanced on the decode step at the largest batch.
  const std::vector<RankSpeed> dspeeds = node.rank_speeds(decode);
  const int big = *std::max_element(o.decode_batches.begin(), o.decode_batches.end());
  LatencySimulator::Step probe = node.decode_step(big);
  probe.layers = 1, probe.head = false;
  const double layer_cost = node.step_time(decode, dspeeds, probe).ms;
  probe.layers = 0, probe.head = true;
  const double head_cost = node.step_time(decode, dspeeds, probe).ms;
  const std::vector<int> counts = balanced_layer_split(m.n_layers, P, layer_cost, head_cost);
  const ModelWeightBytes wb = model_weight_bytes(m, node.workload().weight_bytes);
  const double kv_per_layer = 2.0 * static_cast<double>(m.kv_dim()) * node.workload().kv_bytes *
                              m.max_seq_len * o.kv_sequences;
  int first = 0;
  for (int i = 0; i < P; ++i) {
    PipelineStage st;
    st.first_layer = first;
    st.layers = counts[static_cast<size_t>(i)];
    st.embedding = i == 0;
    st.head = i == P - 1;
    st.weight_bytes =
        st.layers * wb.layer + (st.embedding ? wb.embedding : 0) + (st.head ? wb.head : 0);
    st.kv_bytes = st.layers * kv_per_layer;
    first += st.layers;
    if (o.node_memory_bytes > 0 && e.fits &&
        st.weight_bytes + st.kv_bytes > static_cast<double>(o.node_memory_bytes)) {
      e.fits = false;
      e.why_not = "node " + std::to_string(i) + " needs " + gb(st.weight_bytes) + " of weights + " +
                  gb(st.kv_bytes) + " of KV cache (" + std::to_string(o.kv_sequences) +
                  " sequences of " + std::to_string(m.max_seq_len) + " tokens), more than its " +
                  gb(static_cast<double>(o.node_memory_bytes));
    }
    e.split.push_back(st);
  }

  // Prefill: the trace's requests chunk by chunk; the mean prompt alone for the TTFT.
  const std::vector<RankSpeed> pspeeds = node.rank_speeds(prefill);
  auto chunk_timing = [&](const LatencySimulator::Step& s) {
    return pipeline_timing(stage_times(node, prefill, pspeeds, s, e.split),
                           o.link.transfer_s(static_cast<double>(s.tokens) * hidden_bytes));
  };
  double tokens = 0, busy_s = 0;
  for (const auto& r : node.trace().requests) {
    tokens += static_cast<double>(r.input);
    for (const auto& s : node.prefill_steps(r.input)) busy_s += chunk_timing(s).period_s;
  }
  e.prefill_tokens_per_s = busy_s > 0 ? tokens / busy_s : 0;
  e.mean_prompt = std::max<int64_t>(1, std::llround(node.trace().mean_input()));
  const std::vector<LatencySimulator::Step> prompt = node.prefill_steps(e.mean_prompt);
  for (const auto& s : prompt) e.ttft_ms += chunk_timing(s).latency_s * 1e3;
  if (P > 1)
    e.prefill_hop_ms =
        o.link.transfer_s(static_cast<double>(prompt.front().tokens) * hidden_bytes) * 1e3;

  // Decode: the micro-batch count with the shortest step.
  for (int b : o.decode_batches) {
    DecodeEstimate best;
    best.batch = b;
    best.step_ms = std::numeric_limits<double>::infinity();
    const int lo = P > 1 && b > 1 ? 2 : 1;
    const int hi = P > 1 ? std::max(lo, std::min({b, 2 * P, o.max_micro_batches})) : 1;
    for (int mb = lo; mb <= hi; ++mb) {
      const int rows = (b + mb - 1) / mb;
      const double hop_s = o.link.transfer_s(rows * hidden_bytes);
      const PipelineTiming t = pipeline_timing(
          stage_times(node, decode, dspeeds, node.decode_step(rows), e.split), hop_s, mb);
      // The sampled token ids go back to the first node before the next step.
      const double back_s = P > 1 ? o.link.transfer_s(4.0 * b) : 0;
      const double step_ms = (t.step_s + back_s) * 1e3;
      if (step_ms < best.step_ms) {
        best.micro_batches = mb;
        best.step_ms = step_ms;
        best.utilization = t.utilization * t.step_s / (t.step_s + back_s);
        best.tokens_per_s = b / (step_ms * 1e-3);
        best.hop_ms = P > 1 ? hop_s * 1e3 : 0;
      }
    }
    e.decode_at.push_back(best);
  }
  return e;
}

}  // namespace sandwich::tuner
