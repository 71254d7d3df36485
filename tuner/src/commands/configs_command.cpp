#include "tuner/commands/configs_command.h"

#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/runtime/executor.h"
#include "tuner/measured_evaluator.h"
#include "tuner/placement_aware_search.h"
#include "tuner/plan_machine.h"
#include "tuner/search_report.h"
#include "tuner/time_text.h"

namespace sandwich::tuner {
namespace {

std::vector<Phase> checked_phases(const ConfigsRequest& r) {
  if (r.evaluator != "simulator" && r.evaluator != "measured")
    throw CliError("--evaluator must be simulator or measured, got '" + r.evaluator + "'");
  std::vector<Phase> phases = phases_named(r.phase);
  if (r.search.top_k < 1) throw CliError("--top-k must be at least 1");
  if (r.search.patience < 0) throw CliError("--patience must be >= 0");
  return phases;
}

// A plan is written for a weights file's own type, and only with rank counts its weights split
// over (a quantized file's whole blocks): the file is loaded before the search.
std::unique_ptr<engine::Model> plan_weights(const ConfigsRequest& r) {
  const std::string& model = r.common.setup.model;
  if (r.plan_out.empty() || !std::filesystem::is_regular_file(model) ||
      std::filesystem::path(model).extension() == ".json")
    return nullptr;
  engine::LoadOptions lo;
  lo.model = model;
  lo.require_tokenizer = false;
  return engine::load_model(lo);
}

// The best prefill and decode configurations as a plan, without a kernel table.
engine::Plan configs_plan(const ConfigsRequest& r, const SearchSetup& s,
                          const std::vector<SearchResult>& results, const engine::Model* weights,
                          const std::string& evaluator, bool simulated,
                          const nlohmann::json& details) {
  engine::Plan plan;
  plan.version = engine::kPlanVersion;
  const RankedConfig& pf = results.at(0).ranked.front();
  const RankedConfig& dc = results.at(1).ranked.front();
  plan.prefill = pf.config;
  plan.decode = dc.config;
  // A weights file says its own type (dummy weights of a preset are BF16).
  std::string dtype = "bf16", storage, storage_name;
  if (weights) {
    if (weights->weight_dtype() == engine::WeightDType::F32) dtype = "f32";
    storage = weights->weight_storage;
    storage_name = weights->weight_storage_name;
  }
  const std::string& model = r.common.setup.model;
  plan.model = engine::model_identity(s.model, dtype, std::filesystem::exists(model) ? model : "",
                                      storage, storage_name);
  plan.machine = plan_machine(pf.config, dc.config);
  (simulated ? plan.prefill_figures.simulated_ms : plan.prefill_figures.measured_ms) =
      pf.prediction.ms;
  (simulated ? plan.decode_figures.simulated_ms : plan.decode_figures.measured_ms) =
      dc.prediction.ms;
  plan.created = utc_now_text();
  plan.command = r.command_line;
  plan.objective = "the lowest " + evaluator +
                   " figure of each phase (mean prefill ms per request; ms per decode step of " +
                   std::to_string(r.common.decode_batch) + "); no kernel table";
  plan.details_json = details.dump();
  return plan;
}

}  // namespace

void run_configs(const ConfigsRequest& r, std::ostream& out, std::ostream& err) {
  const std::vector<Phase> phases = checked_phases(r);
  SearchOptions so = r.search;
  so.numa_local = r.numa_local;
  so.hash = r.placement_hash ? topotree::HashMode::Placement : topotree::HashMode::Structure;
  if (!r.plan_out.empty() && !r.phase.empty())
    throw CliError("--plan-out needs both phases; drop --phase");
  SearchSetup s = command_search_setup(r.common, "configs");
  if (!r.plan_out.empty() && !s.machine.local)
    throw CliError("--plan-out writes a plan for this machine; drop --topology '" + s.machine.name +
                   "'");
  const WorkloadOptions w = command_workload(r.common, s);
  LatencySimulator sim(s.machine.tree, s.params, s.model, s.trace, w);
  std::unique_ptr<MeasuredEvaluator> measured;
  if (r.evaluator == "measured") {
    if (!s.machine.local)
      throw CliError(
          "the measured evaluator runs the engine on this machine; it cannot measure topology '" +
          s.machine.name + "' (drop --topology or use --evaluator simulator)");
    MeasureOptions mo;
    mo.real_weights = s.quantized_file();
    measured = std::make_unique<MeasuredEvaluator>(r.common.setup.model, s.trace, w, mo);
  }
  ConfigEvaluator& ev = measured ? static_cast<ConfigEvaluator&>(*measured) : sim;
  const std::unique_ptr<engine::Model> weights = plan_weights(r);
  if (measured)
    so.ranks_fit = [&](int n) { return measured->ranks_fit(n); };
  else if (weights)
    so.ranks_fit = [&](int n) { return engine::rank_count_fits(*weights, n); };
  // A latent group's placements matter to the simulator alone; measured steps see the machine.
  const LatentGroupParams latent = measured ? LatentGroupParams{} : s.params.latent_group;
  std::vector<std::string> notes = s.notes;
  if (r.placement_hash && latent.active())
    notes.push_back(
        "this machine's latent group has the search use the placement hash by default (within a "
        "bound, merged with the structure hash); --placement-hash searches it alone, unbounded");
  std::vector<SearchResult> results;
  for (Phase ph : phases) {
    so.phase = ph;
    PlacementAwareResult pr = search_configs_placement_aware(s.machine.tree, s.model, ev, so,
                                                             latent, kTunerPlacementBound);
    if (!pr.note.empty()) notes.push_back(pr.note);
    results.push_back(std::move(pr.result));
  }
  ReportContext ctx{&s.machine,       &s.model,
                    ev.name(),        measured ? "none (measured)" : s.params.source,
                    trace_line(s, w), notes};
  if (!measured) ctx.contention = sim.latent_group_summary();
  if (r.json) {
    out << report_json(ctx, results, s.params.to_json()).dump(2) << "\n";
  } else {
    out << report_header(ctx);
    ConfigNote note;
    if (!ctx.contention.empty())
      note = [&sim](const topotree::ServiceConfig& c) {
        return "busiest latent group: " + std::to_string(sim.busiest_latent_group(c)) + " of " +
               std::to_string(sim.params().latent_group.cores) + " cores";
      };
    for (const auto& res : results) out << report_text(res, note);
  }
  if (r.plan_out.empty()) return;
  const engine::Plan plan = configs_plan(r, s, results, weights.get(), ev.name(), !measured,
                                         report_json(ctx, results, s.params.to_json()));
  engine::write_plan(plan, r.plan_out);
  (r.json ? err : out) << "wrote " << r.plan_out << " (prefill " << plan.prefill.to_string(8)
                       << ", decode " << plan.decode.to_string(8) << ")\n";
}

}  // namespace sandwich::tuner
