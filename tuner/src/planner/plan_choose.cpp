#include "planner/pair_choice.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {

void plan_choose(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("choose")) return;
  run.progress.stage(3, "choose", objective_text(run.slo));
  nlohmann::json pairs = nlohmann::json::array();
  const PairChoice ch = choose_pair(st.prefill, st.decode, st.trace,
                                    measured_prompt_tokens(st, run.model.config.max_seq_len),
                                    run.request, run.slo, true, &pairs);
  st.choice = {{"prefill", ch.prefill},
               {"decode", ch.decode},
               {"goodput_rps", ch.goodput.rate},
               {"limited_by", ch.goodput.limited_by},
               {"ttft_ms", ch.goodput.at_rate.ttft_ms},
               {"tpot_ms", ch.goodput.at_rate.tpot_ms},
               {"batch", ch.goodput.at_rate.batch},
               {"latency_ms", ch.latency_ms},
               {"pairs", pairs}};
  st.seconds["choose"] = run.progress.seconds();
  st.done.push_back("choose");
  run.progress.done("prefill " + short_config(st.prefill[ch.prefill].config) + ", decode " +
                    short_config(st.decode[ch.decode].config));
  run.save();
}

}  // namespace sandwich::tuner
