#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "planner/candidate_order.h"
#include "planner/pair_choice.h"
#include "planner/pipeline_choice.h"
#include "tuner/plan_machine.h"
#include "tuner/planner/plan_stages.h"
#include "tuner/time_text.h"

namespace sandwich::tuner {
namespace {

using json = nlohmann::json;

// The plan's "details": how it was made, for people reading it.
json plan_details(const PlanRun& run) {
  const PlanState& st = run.state;
  json prefill_list = json::array(), decode_list = json::array();
  for (const auto& c : st.prefill) prefill_list.push_back(c.to_json());
  for (const auto& c : st.decode) decode_list.push_back(c.to_json());
  json details = {
      {"candidates", {{"prefill", prefill_list}, {"decode", decode_list}}},
      {"figures",
       "prefill: mean ms per trace request (chunks of prefill_chunk); decode: ms per step of "
       "decode_batch sequences (measured_decode_1_ms: of one); measured_*: with the cost model's "
       "schedules, tuned_*: measured again with the kernels tuned for the candidates (kernels: "
       "tuned, partly tuned or untuned)"},
      {"workload",
       {{"prefill_chunk", run.request.prefill_chunk},
        {"decode_batch", run.decode_batch},
        {"max_num_seqs", run.request.max_num_seqs},
        {"prefill_requests_measured", st.prefill_samples}}},
      {"trace", st.trace_source},
      {"machine_params", st.params_source},
      {"slo",
       {{"name", run.slo.name},
        {"ttft_ms", run.slo.ttft_ms},
        {"tpot_ms", run.slo.tpot_ms},
        {"attainment", run.slo.attainment()}}},
      {"choice", st.choice},
      {"cost_model_choice", st.cost_model_choice},
      {"choice_changed", st.choice.value("changed", false)},
      {"kernels", st.kernel_report},
      {"budget_s", run.budget.total()},
      {"budget_cuts", st.cuts},
      {"stage_seconds", st.seconds}};
  if (run.machine.cluster)
    details["pipeline"] = pipeline_json(choose_pipeline(run), *run.machine.cluster);
  return details;
}

std::string tuned_words(const PlanCandidate& c) {
  return c.tuned_ms ? " with tuned kernels" : " with the cost model's schedules";
}

// "2343.7 -> 2201.4 ms (-6.1%)", or the cost model's figure alone when not measured again.
std::string before_after(const std::optional<double>& before, const std::optional<double>& after) {
  if (!before) return "not measured";
  std::string s = ms_text(*before);
  if (!after) return s + " ms";
  std::ostringstream pct;
  pct << std::showpos << std::fixed << std::setprecision(1) << (*after / *before - 1) * 100;
  return s + " -> " + ms_text(*after) + " ms (" + pct.str() + "%)";
}

// Each measured candidate's figures before and after its kernels were tuned, the two choices
// and the kernels stage's shared keys.
void tuning_lines(std::ostream& os, const PlanRun& run) {
  const PlanState& st = run.state;
  os << "choice     " << pair_text(st, st.choice) << " with tuned kernels; ";
  if (st.choice.value("changed", false))
    os << "CHANGED from " << pair_text(st, st.cost_model_choice)
       << " chosen with the cost model's schedules\n";
  else
    os << "the cost model's schedules chose the same pair\n";
  const char* label = "tuning    ";
  for (const CandidateRef& r : candidate_order(st)) {
    const PlanCandidate& c = candidate_at(st, r);
    if (!c.measured_ms) continue;
    os << label << " " << std::left << std::setw(26) << candidate_name(st, r) << std::right << " "
       << (c.kernels.empty() ? "untuned" : c.kernels) << ": "
       << before_after(c.measured_ms, c.tuned_ms);
    if (!r.prefill)
      os << "; one sequence " << before_after(c.measured_decode_1_ms, c.tuned_decode_1_ms);
    os << "\n";
    label = "          ";
  }
  const json& k = st.kernel_report;
  if (k.is_object())
    os << "kernels    " << k.at("keys_distinct").get<size_t>() << " distinct GEMM shapes for "
       << k.at("candidates").get<size_t>() << " candidates (" << k.at("keys_asked").get<size_t>()
       << " asked: equal per-rank shapes tuned once), " << k.at("keys_tuned").get<size_t>()
       << " tuned, " << k.at("attention_kernels").get<size_t>() << " attention kernels\n";
}

// The summary's figures of the chosen pair and its goodput.
void pair_lines(std::ostream& os, const PlanRun& run) {
  const PlanState& st = run.state;
  const PlanCandidate& P = chosen_prefill(st);
  const PlanCandidate& D = chosen_decode(st);
  const double prefill_tokens = measured_prompt_tokens(st, run.model.config.max_seq_len);
  const int decode_batch = run.decode_batch;
  os << "prefill    " << short_config(P.config) << ": measured "
     << ms_text(P.final_ms().value_or(-1)) << " ms per request" << tuned_words(P) << " (simulated "
     << ms_text(P.simulated_ms) << "), " << prefill_tokens / P.final_ms().value_or(1) * 1000
     << " prompt tokens/s\n";
  os << "decode     " << short_config(D.config) << ": measured "
     << ms_text(D.final_ms().value_or(-1)) << " ms per step of " << decode_batch << tuned_words(D)
     << " (simulated " << ms_text(D.simulated_ms) << "), "
     << decode_batch / D.final_ms().value_or(1) * 1000 << " tokens/s; one sequence "
     << ms_text(D.final_decode_1_ms().value_or(-1)) << " ms, "
     << 1000 / D.final_decode_1_ms().value_or(1) << " tokens/s\n";
  os << "goodput    " << rate_text(st.choice.at("goodput_rps").get<double>())
     << " requests/s estimated (limited by " << st.choice.at("limited_by").get<std::string>()
     << "; there P" << std::lround(run.slo.attainment() * 100) << " TTFT "
     << st.choice.at("ttft_ms").get<double>() << " ms, TPOT "
     << st.choice.at("tpot_ms").get<double>() << " ms, " << st.choice.at("batch").get<double>()
     << " sequences decoding)\n";
  if (st.choice.at("goodput_rps").get<double>() <= 0)
    os << "           no pair meets the SLO at any rate on this machine (" << run.slo.name
       << "): the pair with the lowest latency was chosen; --slo-scale loosens the SLO\n";
}

}  // namespace

engine::Plan plan_write(PlanRun& run) {
  PlanState& st = run.state;
  run.progress.stage(6, "write", run.out.string());
  const PlanCandidate& P = chosen_prefill(st);
  const PlanCandidate& D = chosen_decode(st);
  engine::Plan plan;
  plan.version = engine::kPlanVersion;
  plan.prefill = P.config;
  plan.decode = D.config;
  plan.schedules = run.table_file;
  plan.model = engine::model_identity(run.model.config, run.model.dtype, run.model.weights_file,
                                      run.model.storage, run.model.storage_name);
  plan.machine = plan_machine(P.config, D.config);
  plan.created = utc_now_text();
  plan.command = run.request.command_line;
  plan.objective = objective_text(run.slo);
  plan.prefill_figures = {P.simulated_ms, P.final_ms().value_or(-1)};
  plan.decode_figures = {D.simulated_ms, D.final_ms().value_or(-1)};
  st.seconds["write"] = 0;
  plan.details_json = plan_details(run).dump();
  engine::write_plan(plan, run.out);
  st.seconds["write"] = run.progress.seconds();
  run.progress.done("");
  std::error_code ec;
  std::filesystem::remove(run.state_file, ec);
  return plan;
}

std::string plan_summary(const PlanRun& run, const engine::Plan& plan) {
  const PlanState& st = run.state;
  const PlanModel& model = run.model;
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "wrote " << run.out.string() << " (kernel table " << run.table_file.string() << ")\n";
  os << "model      " << model.config.name << " (" << model.storage_name
     << (model.weights_file.empty() ? ", dummy weights" : ", " + model.weights_file) << ")\n";
  os << "machine    " << plan.machine->cpu << ", CPUs " << plan.machine->cores << "\n";
  RequestTrace t;
  t.requests = st.trace;
  os << "trace      " << st.trace_source << ": mean input " << std::setprecision(0)
     << t.mean_input() << ", output " << t.mean_output() << " tokens\n"
     << std::setprecision(1);
  os << "objective  " << objective_text(run.slo) << "\n";
  pair_lines(os, run);
  tuning_lines(os, run);
  os << "stages    ";
  double total = 0;
  for (const char* s : {"search", "measure", "kernels", "remeasure", "choose", "write"}) {
    const double v = st.seconds.count(s) ? st.seconds.at(s) : 0;
    total += v;
    os << " " << s << " " << v << " s,";
  }
  os << " total " << total << " s of a " << duration_text(run.budget.total()) << " budget\n";
  if (st.cuts.empty()) {
    os << "budget     nothing cut\n";
  } else {
    for (const auto& c : st.cuts) os << "budget     cut: " << c << "\n";
  }
  os << "serve with: sandwichd --model " << shell_quote(run.request.load.model)
     << (run.request.load.load_format == engine::LoadFormat::Dummy ? " --load-format dummy" : "")
     << " --plan " << shell_quote(run.out.string()) << "\n";
  return os.str();
}

}  // namespace sandwich::tuner
