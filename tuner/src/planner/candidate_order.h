#pragma once
// The order in which the plan's stages take the candidates (measuring, tuning their kernels,
// measuring them again): the phases alternate, best simulated first, so that a budget cut
// leaves the best of both phases done.
#include <cstddef>
#include <string>
#include <vector>

#include "tuner/planner/plan_state.h"

namespace sandwich::tuner {

struct CandidateRef {
  bool prefill = true;
  size_t index = 0;  // into the phase's candidates
};

std::vector<CandidateRef> candidate_order(const PlanState& st);

PlanCandidate& candidate_at(PlanState& st, CandidateRef r);
const PlanCandidate& candidate_at(const PlanState& st, CandidateRef r);

// Whether the measure stage measured it (every figure the choice needs).
bool was_measured(const PlanCandidate& c, bool prefill);

// "prefill 1x2 [0-1]", as messages name a candidate.
std::string candidate_name(const PlanState& st, CandidateRef r);

}  // namespace sandwich::tuner
