#include "tuner/goodput_estimate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sandwich::tuner {

double ServiceTimes::decode_ms(double b) const {
  if (decode_batch <= 1) return decode_ms_1;
  const double slope = (decode_ms_batch - decode_ms_1) / (decode_batch - 1);
  return decode_ms_1 + slope * (std::max(1.0, b) - 1);
}

LoadEstimate estimate_load(const ServiceTimes& t, const std::vector<LengthPair>& trace,
                           const ServingLimits& limits, double attainment, double rate) {
  if (trace.empty()) throw std::invalid_argument("the goodput estimate needs a request trace");
  if (!(t.prefill_ms_per_token > 0) || !(t.decode_ms_1 > 0) || !(t.decode_ms_batch > 0))
    throw std::invalid_argument("the goodput estimate needs positive prefill and decode times");
  if (limits.prefill_chunk < 1 || limits.max_num_seqs < 1)
    throw std::invalid_argument("the goodput estimate needs a chunk and a batch limit >= 1");
  double mean_in = 0, mean_out = 0, mean_chunks = 0;
  for (const auto& r : trace) {
    mean_in += r.input;
    mean_out += r.output;
    mean_chunks += std::ceil(static_cast<double>(r.input) / limits.prefill_chunk);
  }
  const double n_req = static_cast<double>(trace.size());
  mean_in /= n_req;
  mean_out /= n_req;
  mean_chunks /= n_req;

  LoadEstimate e;
  e.rate = rate;
  const double per_ms = rate / 1000.0;  // requests per ms
  const double rho_p = per_ms * t.prefill_ms_per_token * mean_in;
  if (rho_p >= 1) {
    e.overloaded = true;
    return e;
  }
  // n = L * mean(O) * D(max(1, n)) / (1 - rho_p): iterate from an empty batch; it rises
  // monotonically to the fixed point, or past the batch limit when there is none.
  const double a = per_ms * mean_out / (1 - rho_p);
  double n = 0;
  for (int i = 0; i < 200; ++i) {
    const double next = a * t.decode_ms(n);
    if (next > limits.max_num_seqs) {
      e.overloaded = true;
      e.batch = next;
      return e;
    }
    if (std::abs(next - n) <= 1e-9 * std::max(1.0, n)) {
      n = next;
      break;
    }
    n = next;
  }
  const double step = t.decode_ms(n);
  e.batch = n;
  e.tpot_ms = step / (1 - rho_p);
  const double busy = std::min(1.0, n);  // chance a prefill chunk shares the server with decode
  const double service = t.prefill_ms_per_token * mean_in + mean_chunks * busy * step;
  const double rho = per_ms * service;
  if (rho >= 1) {
    e.overloaded = true;
    return e;
  }
  const double wait = rho * service / (2 * (1 - rho));
  std::vector<double> ttft;
  ttft.reserve(trace.size());
  for (const auto& r : trace)
    ttft.push_back(wait + t.prefill_ms_per_token * r.input +
                   std::ceil(static_cast<double>(r.input) / limits.prefill_chunk) * busy * step);
  std::sort(ttft.begin(), ttft.end());
  const double q = std::clamp(attainment, 0.0, 1.0);
  const size_t k =
      std::min(ttft.size() - 1, static_cast<size_t>(std::max(0.0, std::ceil(q * n_req) - 1)));
  e.ttft_ms = ttft[k];
  return e;
}

GoodputEstimate estimate_goodput(const ServiceTimes& t, const std::vector<LengthPair>& trace,
                                 const ServingLimits& limits, const SloLimits& slo) {
  if (!(slo.ttft_ms > 0) || !(slo.tpot_ms > 0))
    throw std::invalid_argument("the SLO needs positive TTFT and TPOT limits");
  auto failing = [&](const LoadEstimate& e) -> std::string {
    if (e.overloaded) return e.batch > limits.max_num_seqs ? "the batch limit" : "overload";
    if (e.ttft_ms > slo.ttft_ms) return "TTFT";
    if (e.tpot_ms > slo.tpot_ms) return "TPOT";
    return "";
  };
  GoodputEstimate g;
  const LoadEstimate idle = estimate_load(t, trace, limits, slo.attainment, 0);
  g.at_rate = idle;
  if (std::string why = failing(idle); !why.empty()) {
    g.limited_by = why;
    return g;
  }
  double mean_in = 0;
  for (const auto& r : trace) mean_in += r.input;
  mean_in /= static_cast<double>(trace.size());
  double lo = 0, hi = 1000.0 / (t.prefill_ms_per_token * mean_in);  // prefill alone saturates
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    if (failing(estimate_load(t, trace, limits, slo.attainment, mid)).empty())
      lo = mid;
    else
      hi = mid;
  }
  g.rate = lo;
  g.at_rate = estimate_load(t, trace, limits, slo.attainment, lo);
  g.limited_by = failing(estimate_load(t, trace, limits, slo.attainment, hi));
  if (g.limited_by.empty()) g.limited_by = "overload";
  return g;
}

}  // namespace sandwich::tuner
