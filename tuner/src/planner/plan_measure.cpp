#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/plans/checked_schedule_table.h"
#include "kernels/kernel_tunables.h"
#include "kernels/tuned_schedules.h"
#include "planner/candidate_order.h"
#include "tuner/measured_evaluator.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// The measurements' share of the budget: they stop at this fraction of it. The same time again,
// less the model's loading, is kept for measuring the tuned candidates after the kernels stage.
constexpr double kMeasureShare = 0.3;
// Measuring the tuned candidates stops once this much of the budget is used.
constexpr double kRemeasureShare = 0.98;

// The prefill requests measured are spread over the trace's prompt lengths (its quantiles), not
// the first few drawn: their mean prompt sets the per-token time the choice uses. They go first.
std::vector<LengthPair> spread_over_prompts(const std::vector<LengthPair>& trace, int samples) {
  std::vector<LengthPair> by_input = trace;
  std::stable_sort(by_input.begin(), by_input.end(),
                   [](const LengthPair& x, const LengthPair& y) { return x.input < y.input; });
  std::vector<LengthPair> picked;
  std::vector<bool> taken(by_input.size(), false);
  for (int k = 0; k < samples && k < static_cast<int>(by_input.size()); ++k) {
    const size_t i =
        static_cast<size_t>((k + 0.5) * static_cast<double>(by_input.size()) / samples);
    taken[i] = true;
    picked.push_back(by_input[i]);
  }
  for (size_t i = 0; i < by_input.size(); ++i)
    if (!taken[i]) picked.push_back(by_input[i]);
  return picked;
}

// Fits the measurements into their share of the budget, by the simulator's figures: fewer
// prefill requests first, then fewer candidates.
void fit_to_budget(PlanRun& run) {
  PlanState& st = run.state;
  size_t n_prefill = st.prefill.size(), n_decode = st.decode.size();
  const double share = kMeasureShare * run.budget.total() - run.budget.used();
  auto cost = [&](int samples, size_t np, size_t nd) {
    double s = 0;
    for (size_t i = 0; i < np; ++i) s += st.prefill[i].simulated_ms * (samples + 1) / 1000;
    for (size_t i = 0; i < nd; ++i)
      s += (st.decode[i].simulated_ms + st.decode[i].simulated_decode_1_ms) * 10 / 1000;
    return s;
  };
  int samples = 8;
  while (samples > 1 && cost(samples, n_prefill, n_decode) > share) samples /= 2;
  while ((n_prefill > 1 || n_decode > 1) && cost(samples, n_prefill, n_decode) > share) {
    if (n_prefill >= n_decode && n_prefill > 1)
      --n_prefill;
    else
      --n_decode;
  }
  st.prefill_samples = samples;
  st.trace = spread_over_prompts(st.trace, samples);
  if (samples < 8)
    st.cuts.push_back("prefill measured on " + std::to_string(samples) +
                      " trace requests instead of 8");
  if (n_prefill < st.prefill.size() || n_decode < st.decode.size())
    st.cuts.push_back("measured " + std::to_string(n_prefill) + " of " +
                      std::to_string(st.prefill.size()) + " prefill and " +
                      std::to_string(n_decode) + " of " + std::to_string(st.decode.size()) +
                      " decode candidates");
  st.prefill.resize(n_prefill);
  st.decode.resize(n_decode);
}

// Which figures a pass over the candidates fills: the cost model's schedules' (the measure stage)
// or the tuned kernels' (the remeasure stage, with the table installed).
enum class Pass { CostModel, Tuned };

bool has_figures(const PlanCandidate& c, bool prefill, Pass pass) {
  if (pass == Pass::CostModel) return was_measured(c, prefill);
  return c.tuned_ms && (prefill || c.tuned_decode_1_ms);
}

// Measures, in candidate_order, the candidates `wanted` selects that lack the pass's figures;
// once `share` of the budget is used only the best of each phase is still measured. Returns the
// candidates the budget left out.
std::vector<std::string> measure_candidates(PlanRun& run, Pass pass, double share,
                                            const std::function<bool(CandidateRef)>& wanted) {
  PlanState& st = run.state;
  std::vector<CandidateRef> order;
  for (const CandidateRef& r : candidate_order(st))
    if (wanted(r) && !has_figures(candidate_at(st, r), r.prefill, pass)) order.push_back(r);
  if (order.empty()) return {};
  if (!run.evaluator) {
    RequestTrace trace;
    trace.requests = st.trace;
    trace.source = st.trace_source;
    MeasureOptions mo;
    mo.max_prefill_requests = st.prefill_samples;
    // Quantized blocks are what runs, and no dummy weights hold them: the file's own.
    mo.real_weights = run.model.quantized;
    run.progress.step(
        0, 1,
        "loading " + run.model.config.name +
            (run.model.quantized ? " (" + run.model.storage_name + ")" : " (dummy weights)"));
    const auto t0 = std::chrono::steady_clock::now();
    run.evaluator =
        std::make_shared<MeasuredEvaluator>(run.request.load.model, trace, run.workload, mo);
    if (pass == Pass::CostModel)
      st.load_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  MeasuredEvaluator& ev = *run.evaluator;
  run.check_stop();
  std::vector<std::string> skipped;
  int n = 0;
  for (const CandidateRef& r : order) {
    ++n;
    PlanCandidate& c = candidate_at(st, r);
    if (r.index > 0 && run.budget.past(share)) {
      skipped.push_back(candidate_name(st, r));
      continue;
    }
    run.progress.step(n - 1, static_cast<int>(order.size()), candidate_name(st, r));
    std::optional<double>& ms = pass == Pass::CostModel ? c.measured_ms : c.tuned_ms;
    std::optional<double>& ms_1 =
        pass == Pass::CostModel ? c.measured_decode_1_ms : c.tuned_decode_1_ms;
    if (r.prefill) {
      ms = ev.evaluate(c.config, Phase::Prefill).ms;
    } else {
      ms = ev.evaluate(c.config, Phase::Decode).ms;
      run.check_stop();
      ms_1 = ev.evaluate_decode(c.config, 1).ms;
    }
    run.save();
    run.check_stop();
  }
  return skipped;
}

// The stage's seconds, added to those of an interrupted run's.
void add_seconds(PlanState& st, const std::string& stage,
                 std::chrono::steady_clock::time_point t0) {
  st.seconds[stage] = st.seconds[stage] +
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Leaves the process on the cost model's schedules again, as it was before the remeasure.
struct InstalledTable {
  explicit InstalledTable(const std::filesystem::path& file) {
    std::ostringstream warnings;
    engine::install_schedule_table(file, warnings);
    text = warnings.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
  }
  ~InstalledTable() {
    kernels::install_tuned_schedules(nullptr);
    kernels::clear_kernel_params();
  }
  InstalledTable(const InstalledTable&) = delete;
  InstalledTable& operator=(const InstalledTable&) = delete;
  std::string text;  // the install's warnings (none for the table the kernels stage wrote)
};

}  // namespace

void plan_measure(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("measure")) return;
  run.progress.stage(2, "measure",
                     "engine steps of the candidates on this machine, with the cost model's "
                     "schedules");
  const auto t0 = std::chrono::steady_clock::now();
  if (st.prefill_samples == 0) fit_to_budget(run);
  const std::vector<std::string> skipped =
      measure_candidates(run, Pass::CostModel, kMeasureShare, [](CandidateRef) { return true; });
  if (!skipped.empty())
    st.cuts.push_back(std::to_string(skipped.size()) +
                      " candidates not measured: the measurements' share of the budget ran out (" +
                      joined(skipped) + ")");
  add_seconds(st, "measure", t0);
  st.done.push_back("measure");
  run.progress.done("");
  run.save();
}

void plan_remeasure(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("remeasure")) return;
  run.progress.stage(4, "remeasure",
                     "engine steps of the tuned candidates again, with their tuned kernels");
  const auto t0 = std::chrono::steady_clock::now();
  // Installed before the evaluator forks any rank, so that the ranks run it too.
  const InstalledTable table(run.table_file);
  if (!table.text.empty()) run.progress.note(table.text);
  const std::vector<std::string> skipped =
      measure_candidates(run, Pass::Tuned, kRemeasureShare, [&](CandidateRef r) {
        const PlanCandidate& c = candidate_at(st, r);
        return was_measured(c, r.prefill) && (c.kernels == "tuned" || c.kernels == "partly tuned");
      });
  if (!skipped.empty())
    st.cuts.push_back(
        "not measured again with their tuned kernels (the budget ran out; their "
        "cost-model figures count): " +
        joined(skipped));
  add_seconds(st, "remeasure", t0);
  st.done.push_back("remeasure");
  run.evaluator.reset();  // the model's memory, no longer needed
  int n = 0;
  for (const CandidateRef& r : candidate_order(st)) n += candidate_at(st, r).tuned_ms ? 1 : 0;
  run.progress.done(std::to_string(n) + (n == 1 ? " candidate" : " candidates") +
                    " measured with tuned kernels");
  run.save();
}

}  // namespace sandwich::tuner
