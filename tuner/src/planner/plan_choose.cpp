#include "planner/pair_choice.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// The candidates with the figures a choice reads as their measured ones: the tuned kernels'
// where measured (else the cost model's), or the cost model's alone.
std::vector<PlanCandidate> with_figures(std::vector<PlanCandidate> v, bool tuned) {
  if (tuned)
    for (PlanCandidate& c : v) {
      c.measured_ms = c.final_ms();
      c.measured_decode_1_ms = c.final_decode_1_ms();
    }
  return v;
}

nlohmann::json choice_json(const PairChoice& ch, nlohmann::json pairs) {
  return {{"prefill", ch.prefill},
          {"decode", ch.decode},
          {"goodput_rps", ch.goodput.rate},
          {"limited_by", ch.goodput.limited_by},
          {"ttft_ms", ch.goodput.at_rate.ttft_ms},
          {"tpot_ms", ch.goodput.at_rate.tpot_ms},
          {"batch", ch.goodput.at_rate.batch},
          {"latency_ms", ch.latency_ms},
          {"pairs", std::move(pairs)}};
}

}  // namespace

void plan_choose(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("choose")) return;
  run.progress.stage(5, "choose", objective_text(run.slo));
  const double prompt_tokens = measured_prompt_tokens(st, run.model.config.max_seq_len);
  nlohmann::json choices[2];
  for (const bool tuned : {false, true}) {
    nlohmann::json pairs = nlohmann::json::array();
    const PairChoice ch =
        choose_pair(with_figures(st.prefill, tuned), with_figures(st.decode, tuned), st.trace,
                    prompt_tokens, run.request, run.slo, true, &pairs);
    choices[tuned] = choice_json(ch, std::move(pairs));
  }
  st.cost_model_choice = std::move(choices[0]);
  st.choice = std::move(choices[1]);
  const bool changed = st.choice.at("prefill") != st.cost_model_choice.at("prefill") ||
                       st.choice.at("decode") != st.cost_model_choice.at("decode");
  st.choice["changed"] = changed;
  st.seconds["choose"] = run.progress.seconds();
  st.done.push_back("choose");
  run.progress.done(
      pair_text(st, st.choice) + " with tuned kernels" +
      (changed ? "; the cost model's schedules chose " + pair_text(st, st.cost_model_choice)
               : "; the same pair as with the cost model's schedules"));
  run.save();
}

}  // namespace sandwich::tuner
