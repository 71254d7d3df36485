#include <algorithm>
#include <chrono>
#include <utility>

#include "tuner/measured_evaluator.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// The measurements' share of the budget: they stop at this fraction of it.
constexpr double kMeasureShare = 0.35;

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

// Measures the candidates not yet measured; returns how many the budget left out.
int measure_candidates(PlanRun& run) {
  PlanState& st = run.state;
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
  MeasuredEvaluator ev(run.request.load.model, trace, run.workload, mo);
  run.check_stop();
  // Alternate the phases, best-simulated first: a budget cut leaves both phases' best.
  std::vector<std::pair<bool, size_t>> order;
  for (size_t i = 0; i < std::max(st.prefill.size(), st.decode.size()); ++i) {
    if (i < st.prefill.size()) order.push_back({true, i});
    if (i < st.decode.size()) order.push_back({false, i});
  }
  int n = 0, skipped = 0;
  for (const auto& [is_prefill, i] : order) {
    ++n;
    PlanCandidate& c = is_prefill ? st.prefill[i] : st.decode[i];
    if (c.measured_ms && (is_prefill || c.measured_decode_1_ms)) continue;
    if (i > 0 && run.budget.past(kMeasureShare)) {
      ++skipped;
      continue;
    }
    run.progress.step(n - 1, static_cast<int>(order.size()),
                      std::string(is_prefill ? "prefill " : "decode ") + short_config(c.config));
    if (is_prefill) {
      c.measured_ms = ev.evaluate(c.config, Phase::Prefill).ms;
    } else {
      c.measured_ms = ev.evaluate(c.config, Phase::Decode).ms;
      run.check_stop();
      c.measured_decode_1_ms = ev.evaluate_decode(c.config, 1).ms;
    }
    run.save();
    run.check_stop();
  }
  return skipped;
}

}  // namespace

void plan_measure(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("measure")) return;
  run.progress.stage(2, "measure", "engine steps of the candidates on this machine");
  const auto t0 = std::chrono::steady_clock::now();
  if (st.prefill_samples == 0) fit_to_budget(run);
  const int skipped = measure_candidates(run);
  if (skipped > 0)
    st.cuts.push_back(std::to_string(skipped) +
                      " candidates not measured: the measurements' share of the budget ran out");
  st.seconds["measure"] =
      st.seconds["measure"] +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.done.push_back("measure");
  run.progress.done("");
  run.save();
}

}  // namespace sandwich::tuner
