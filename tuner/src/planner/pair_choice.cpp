#include "planner/pair_choice.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace sandwich::tuner {
namespace {

ServiceTimes service_times(const PlanCandidate& p, const PlanCandidate& d, double prefill_tokens,
                           int decode_batch, bool measured) {
  ServiceTimes t;
  t.prefill_ms_per_token = (measured ? *p.measured_ms : p.simulated_ms) / prefill_tokens;
  t.decode_ms_batch = measured ? *d.measured_ms : d.simulated_ms;
  t.decode_ms_1 = measured ? *d.measured_decode_1_ms : d.simulated_decode_1_ms;
  t.decode_batch = decode_batch;
  return t;
}

}  // namespace

double mean_input(const std::vector<LengthPair>& t, size_t n, int32_t max_seq_len) {
  n = std::min(n, t.size());
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::min(t[i].input, max_seq_len - 1);
  return n ? s / static_cast<double>(n) : 0;
}

double measured_prompt_tokens(const PlanState& st, int32_t max_seq_len) {
  return mean_input(st.trace, static_cast<size_t>(st.prefill_samples), max_seq_len);
}

const PlanCandidate& chosen_prefill(const PlanState& st) {
  return st.prefill.at(st.choice.at("prefill").get<size_t>());
}

const PlanCandidate& chosen_decode(const PlanState& st) {
  return st.decode.at(st.choice.at("decode").get<size_t>());
}

PairChoice choose_pair(const std::vector<PlanCandidate>& prefill,
                       const std::vector<PlanCandidate>& decode,
                       const std::vector<LengthPair>& trace, double prefill_tokens,
                       const PlanRequest& r, const SloPreset& slo, bool measured,
                       nlohmann::json* table) {
  std::optional<PairChoice> best;
  double mean_out = 0;
  for (const auto& q : trace) mean_out += q.output;
  mean_out /= static_cast<double>(trace.size());
  ServingLimits limits;
  limits.max_num_seqs = r.max_num_seqs;
  limits.prefill_chunk = r.prefill_chunk;
  for (size_t i = 0; i < prefill.size(); ++i) {
    if (measured && !prefill[i].measured_ms) continue;
    for (size_t j = 0; j < decode.size(); ++j) {
      if (measured && (!decode[j].measured_ms || !decode[j].measured_decode_1_ms)) continue;
      const ServiceTimes t =
          service_times(prefill[i], decode[j], prefill_tokens, r.decode_batch, measured);
      PairChoice c{i, j,
                   estimate_goodput(t, trace, limits, {slo.ttft_ms, slo.tpot_ms, slo.attainment()}),
                   t.prefill_ms_per_token * prefill_tokens + mean_out * t.decode_ms_1};
      if (table)
        table->push_back({{"prefill", short_config(prefill[i].config)},
                          {"decode", short_config(decode[j].config)},
                          {"goodput_rps", c.goodput.rate},
                          {"limited_by", c.goodput.limited_by},
                          {"latency_ms", c.latency_ms}});
      const bool tie = best && std::abs(c.goodput.rate - best->goodput.rate) <=
                                   1e-6 * std::max(c.goodput.rate, best->goodput.rate);
      if (!best || (tie ? c.latency_ms < best->latency_ms : c.goodput.rate > best->goodput.rate))
        best = c;
    }
  }
  if (!best) throw std::runtime_error("no configuration pair was measured");
  return *best;
}

std::string objective_text(const SloPreset& slo) {
  std::ostringstream os;
  os << "goodput: the highest request rate at which the estimated P"
     << std::lround(slo.attainment() * 100) << " TTFT <= " << slo.ttft_ms
     << " ms and TPOT <= " << slo.tpot_ms << " ms (SLO " << slo.name
     << "), from measured step times (tuner/goodput_estimate.h); ties go to the lower latency";
  return os.str();
}

std::string pair_text(const PlanState& st, const nlohmann::json& choice) {
  return "prefill " + short_config(st.prefill.at(choice.at("prefill").get<size_t>()).config) +
         ", decode " + short_config(st.decode.at(choice.at("decode").get<size_t>()).config);
}

std::string ms_text(double ms) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms < 1 ? 3 : (ms < 100 ? 2 : 1)) << ms;
  return os.str();
}

std::string rate_text(double r) {
  std::ostringstream os;
  os << std::setprecision(3) << r;
  return os.str();
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace sandwich::tuner
