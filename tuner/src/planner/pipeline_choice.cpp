#include "planner/pipeline_choice.h"

#include <stdexcept>

#include "planner/pair_choice.h"
#include "tuner/search_setup.h"

namespace sandwich::tuner {
namespace {

// The candidates with the best figures for P stages: decode at the largest batch first (it
// sets the split), then prefill by the mean prompt's TTFT under that split.
PipelineEstimate best_estimate(const LatencySimulator& sim, const PlanState& st,
                               const PipelineOptions& o) {
  PipelineEstimate best = estimate_pipeline(sim, st.prefill[0].config, st.decode[0].config, o);
  for (size_t i = 1; i < st.decode.size(); ++i) {
    PipelineEstimate e = estimate_pipeline(sim, st.prefill[0].config, st.decode[i].config, o);
    if (e.decode_at.back().step_ms < best.decode_at.back().step_ms) best = std::move(e);
  }
  const topotree::ServiceConfig decode = best.decode;
  for (size_t i = 1; i < st.prefill.size(); ++i) {
    PipelineEstimate e = estimate_pipeline(sim, st.prefill[i].config, decode, o);
    if (e.ttft_ms < best.ttft_ms) best = std::move(e);
  }
  return best;
}

}  // namespace

int PipelineChoice::pipelines(int stages) const {
  return stages > 0 ? nodes / stages : 0;
}

double PipelineChoice::cluster_tokens_per_s(const PipelineEstimate& e) const {
  return pipelines(e.stages) * e.decode_at.back().tokens_per_s;
}

PipelineChoice choose_pipeline(const PlanRun& run) {
  if (!run.machine.cluster) throw std::logic_error("choose_pipeline needs a cluster");
  const Cluster& cluster = *run.machine.cluster;
  const PlanState& st = run.state;
  if (st.prefill.empty() || st.decode.empty())
    throw std::runtime_error("the search found no configuration to pipeline");
  std::vector<std::string> notes;
  const MachineParams params =
      run.search_params ? *run.search_params
                        : machine_params_for(run.machine, run.request.params_file, false, notes);
  RequestTrace trace;
  trace.requests = st.trace;
  trace.source = st.trace_source;
  const LatencySimulator sim(run.machine.tree, params, run.model.config, trace, run.workload);
  PipelineChoice c;
  c.nodes = cluster.nodes;
  c.batch = run.decode_batch;
  PipelineOptions o;
  o.link = cluster.link;
  o.node_memory_bytes = run.machine.memory_bytes;
  o.kv_sequences = run.decode_batch;
  o.decode_batches = {1};
  if (run.decode_batch > 1) o.decode_batches.push_back(run.decode_batch);
  const int most = std::min(cluster.nodes, run.model.config.n_layers);
  for (int p = 1; p <= most; ++p) {
    o.stages = p;
    c.by_stages.push_back(best_estimate(sim, st, o));
  }
  const PipelineEstimate* best = nullptr;
  for (const auto& e : c.by_stages) {
    if (!e.fits) continue;
    const double rate = c.cluster_tokens_per_s(e);
    if (!best) {
      best = &e;
      continue;
    }
    const double best_rate = c.cluster_tokens_per_s(*best);
    if (rate > best_rate * 1.02 ||
        (rate >= best_rate * 0.98 && e.decode_at.front().step_ms < best->decode_at.front().step_ms))
      best = &e;
  }
  if (!best) {
    c.why = "no P fits: on all " + std::to_string(most) + " nodes, " + c.by_stages.back().why_not;
    return c;
  }
  c.chosen = best->stages;
  const int n = c.pipelines(best->stages);
  c.why = "P = " + std::to_string(best->stages) + ": the highest decode rate of the " +
          std::to_string(cluster.nodes) + " nodes at batch " + std::to_string(c.batch) + " (" +
          std::to_string(n) + " pipeline" + (n > 1 ? "s" : "") + " x " +
          rate_text(best->decode_at.back().tokens_per_s) + " = " +
          rate_text(c.cluster_tokens_per_s(*best)) + " tokens/s)";
  for (const auto& e : c.by_stages)
    if (!e.fits && e.stages < best->stages) {
      c.why += "; P = " + std::to_string(e.stages) + " does not fit";
      break;
    }
  const PipelineEstimate* fastest = best;
  for (const auto& e : c.by_stages)
    if (e.fits && e.decode_at.front().step_ms < fastest->decode_at.front().step_ms) fastest = &e;
  if (fastest != best)
    c.why += "; P = " + std::to_string(fastest->stages) + " would give the shortest step at " +
             "batch 1 (" + ms_text(fastest->decode_at.front().step_ms) + " ms against " +
             ms_text(best->decode_at.front().step_ms) + ")";
  return c;
}

nlohmann::json pipeline_json(const PipelineChoice& c, const Cluster& cluster) {
  nlohmann::json depths = nlohmann::json::array();
  for (const PipelineEstimate& e : c.by_stages) {
    nlohmann::json layers = nlohmann::json::array(), weights = nlohmann::json::array(),
                   decode = nlohmann::json::array();
    for (const auto& s : e.split) {
      layers.push_back(s.layers);
      weights.push_back(s.weight_bytes);
    }
    for (const auto& d : e.decode_at)
      decode.push_back({{"batch", d.batch},
                        {"micro_batches", d.micro_batches},
                        {"step_ms", d.step_ms},
                        {"tokens_per_s", d.tokens_per_s},
                        {"utilization", d.utilization}});
    depths.push_back({{"stages", e.stages},
                      {"fits", e.fits},
                      {"layers", layers},
                      {"weight_bytes", weights},
                      {"prefill", short_config(e.prefill)},
                      {"decode", short_config(e.decode)},
                      {"prefill_tokens_per_s", e.prefill_tokens_per_s},
                      {"ttft_ms", e.ttft_ms},
                      {"decode_at", decode},
                      {"pipelines", c.pipelines(e.stages)}});
  }
  return {{"nodes", cluster.nodes},
          {"link",
           {{"name", cluster.link.name},
            {"latency_us", cluster.link.latency_us},
            {"gbs", cluster.link.gbs}}},
          {"chosen_stages", c.chosen},
          {"layer_split", layer_split_option(c)},
          {"why", c.why},
          {"depths", depths}};
}

std::string layer_split_option(const PipelineChoice& c) {
  if (c.chosen < 1) return "";
  std::string s;
  for (const auto& st : c.by_stages[static_cast<size_t>(c.chosen - 1)].split) {
    if (!s.empty()) s += ',';
    s += std::to_string(st.layers);
  }
  return s;
}

}  // namespace sandwich::tuner
