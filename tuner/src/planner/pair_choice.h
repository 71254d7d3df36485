#pragma once
// Choosing the plan's prefill and decode configurations from the candidates' figures: by the
// simulator's on a dry run, by the measured ones in the choose stage.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/slo_preset.h"
#include "tuner/goodput_estimate.h"
#include "tuner/planner/plan_request.h"
#include "tuner/planner/plan_state.h"

namespace sandwich::tuner {

struct PairChoice {
  size_t prefill = 0, decode = 0;
  GoodputEstimate goodput;
  double latency_ms = 0;  // one request at no load: prefill + mean output x TPOT
};

// The mean prompt of the first n requests, as the engine clips them to its context.
double mean_input(const std::vector<LengthPair>& t, size_t n, int32_t max_seq_len);

// The mean prompt of the requests the prefill measurements ran (the trace's first
// prefill_samples): what a measured prefill time is divided by for a time per token.
double measured_prompt_tokens(const PlanState& st, int32_t max_seq_len);

// The pair the choose stage recorded in st.choice.
const PlanCandidate& chosen_prefill(const PlanState& st);
const PlanCandidate& chosen_decode(const PlanState& st);

// The pair with the highest estimated goodput; ties go to the lower no-load latency. Every
// pair's figures go into `table` when given. Throws std::runtime_error when, `measured`, no
// pair was measured.
PairChoice choose_pair(const std::vector<PlanCandidate>& prefill,
                       const std::vector<PlanCandidate>& decode,
                       const std::vector<LengthPair>& trace, double prefill_tokens,
                       const PlanRequest& r, const SloPreset& slo, bool measured,
                       nlohmann::json* table);

// What the choice maximizes, in words (the plan's "objective").
std::string objective_text(const SloPreset& slo);

// Figures and words as the plan's messages print them.
std::string ms_text(double ms);
// "prefill 1x2 [0-1], decode 2x1 [0] [1]": a choice ({"prefill": i, "decode": j}) of the state's
// candidates.
std::string pair_text(const PlanState& st, const nlohmann::json& choice);
std::string rate_text(double r);
// `s` as a shell reads it back: bare when safe, else in single quotes.
std::string shell_quote(const std::string& s);

}  // namespace sandwich::tuner
