#include "planner/candidate_order.h"

#include <algorithm>

namespace sandwich::tuner {

std::vector<CandidateRef> candidate_order(const PlanState& st) {
  std::vector<CandidateRef> order;
  for (size_t i = 0; i < std::max(st.prefill.size(), st.decode.size()); ++i) {
    if (i < st.prefill.size()) order.push_back({true, i});
    if (i < st.decode.size()) order.push_back({false, i});
  }
  return order;
}

PlanCandidate& candidate_at(PlanState& st, CandidateRef r) {
  return r.prefill ? st.prefill.at(r.index) : st.decode.at(r.index);
}

const PlanCandidate& candidate_at(const PlanState& st, CandidateRef r) {
  return r.prefill ? st.prefill.at(r.index) : st.decode.at(r.index);
}

bool was_measured(const PlanCandidate& c, bool prefill) {
  return c.measured_ms && (prefill || c.measured_decode_1_ms);
}

std::string candidate_name(const PlanState& st, CandidateRef r) {
  return std::string(r.prefill ? "prefill " : "decode ") + short_config(candidate_at(st, r).config);
}

}  // namespace sandwich::tuner
