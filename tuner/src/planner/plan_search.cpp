#include <iomanip>
#include <sstream>

#include "planner/pair_choice.h"
#include "tuner/config_search.h"
#include "tuner/placement_aware_search.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {

void plan_search(PlanRun& run) {
  PlanState& st = run.state;
  if (!st.has("search")) {
    run.progress.stage(1, "search", "simulator-ranked configurations of " + run.machine.name);
    const MachineParams& params = *run.search_params;
    const RequestTrace& trace = *run.search_trace;
    const engine::ModelConfig& model = run.model.config;
    LatencySimulator sim(run.machine.tree, params, model, trace, run.workload);
    WorkloadOptions w1 = run.workload;
    w1.decode_batch = 1;
    LatencySimulator sim1(run.machine.tree, params, model, trace, w1);
    for (Phase ph : {Phase::Prefill, Phase::Decode}) {
      SearchOptions so;
      so.phase = ph;
      so.top_k = run.request.top_k;
      if (!run.model.rank_counts.empty())
        so.ranks_fit = [&](int r) { return run.model.rank_counts.count(r) != 0; };
      const PlacementAwareResult pr = search_configs_placement_aware(
          run.machine.tree, model, sim, so, params.latent_group, kTunerPlacementBound);
      if (!pr.note.empty()) run.search_notes.push_back(pr.note);
      const SearchResult& r = pr.result;
      for (const RankedConfig& rc : r.ranked) {
        PlanCandidate c{rc.config, rc.prediction.ms};
        if (ph == Phase::Decode) c.simulated_decode_1_ms = sim1.evaluate(rc.config, ph).ms;
        (ph == Phase::Prefill ? st.prefill : st.decode).push_back(std::move(c));
      }
    }
    st.trace = trace.requests;
    st.trace_source = trace.source;
    st.params_source = params.source;
    st.seconds["search"] = run.progress.seconds();
    st.done.push_back("search");
    run.progress.done(std::to_string(st.prefill.size()) + " prefill and " +
                      std::to_string(st.decode.size()) + " decode candidates");
    run.save();
  }
  // A dry run's report carries them.
  if (!run.request.dry_run)
    for (const auto& n : run.search_notes) run.progress.note("note: " + n);
  for (const auto& n : run.notes) run.progress.note("note: " + n);
}

std::string dry_run_report(const PlanRun& run) {
  const PlanState& st = run.state;
  const MachineDescription& machine = run.machine;
  const PlanModel& model = run.model;
  std::ostringstream os;
  RequestTrace t;
  t.requests = st.trace;
  os << std::fixed << std::setprecision(2);
  os << "topology   " << machine.name
     << (machine.description.empty() || machine.description == machine.name
             ? ""
             : ": " + machine.description)
     << "\n           " << machine.tree.leaf_count() << " PUs, " << machine.tree.numa_count()
     << " NUMA nodes" << (machine.cluster ? " per node" : "")
     << "; machine parameters: " << st.params_source << "\n";
  if (run.search_params && run.search_params->latent_group.active())
    os << "contention latent " << run.search_params->latent_group.describe() << "\n";
  for (const auto& n : run.search_notes) os << "search     " << n << "\n";
  os << "model      " << model.config.name << " ("
     << (model.file_quantized ? "quantized" : model.dtype);
  if (model.bytes_per_weight > 0) os << ", " << model.bytes_per_weight << " bytes per weight";
  os << ")\n";
  os << "trace      " << st.trace_source << ": mean input " << std::setprecision(0)
     << t.mean_input() << ", output " << t.mean_output() << " tokens\n"
     << std::setprecision(2);
  os << "dry run: the configurations `plan` would measure on that machine (top "
     << run.request.top_k << " per phase by the latency simulator)\n";
  os << "\nprefill (simulated mean ms per request, chunks of " << run.request.prefill_chunk
     << "):\n";
  int i = 0;
  for (const auto& c : st.prefill)
    os << "  " << ++i << "  " << std::left << std::setw(40) << short_config(c.config) << std::right
       << std::setw(12) << c.simulated_ms << "\n";
  os << "\ndecode (simulated ms per step at batch " << run.decode_batch << " / at batch 1):\n";
  i = 0;
  for (const auto& c : st.decode)
    os << "  " << ++i << "  " << std::left << std::setw(40) << short_config(c.config) << std::right
       << std::setw(12) << c.simulated_ms << std::setw(12) << c.simulated_decode_1_ms << "\n";
  const PairChoice ch = choose_pair(st.prefill, st.decode, st.trace,
                                    mean_input(st.trace, st.trace.size(), model.config.max_seq_len),
                                    run.request, run.slo, false, nullptr);
  os << "\nby the simulator alone: prefill " << short_config(st.prefill[ch.prefill].config)
     << ", decode " << short_config(st.decode[ch.decode].config) << "; estimated goodput "
     << rate_text(ch.goodput.rate) << " req/s at SLO " << run.slo.name << " (limited by "
     << ch.goodput.limited_by << ")\n";
  if (machine.cluster) os << pipeline_report(run);
  return os.str();
}

}  // namespace sandwich::tuner
