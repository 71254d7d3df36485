#pragma once
// Goodput from measured step times: the highest request rate one server can take while its
// requests still meet an SLO, estimated rather than served, so that `sandwich-tune plan` can
// compare (prefill, decode) configuration pairs in seconds.
//
// The model, at a Poisson arrival rate of L requests/s of the trace's lengths:
// - Prefill of a request of I tokens takes p * I (p: measured ms per prompt token) in
//   ceil(I / chunk) chunks; prefill keeps the server busy a share rho_p = L * p * mean(I).
// - Decode steps run in the time prefill leaves (the scheduler alternates a prefill chunk and
//   a decode step while both have work), one token for each of the n running sequences. A step
//   of b sequences takes D(b), linear through the two measured batches (D(1) and D(B)). Time
//   per output token T = D(max(1, n)) / (1 - rho_p), and by Little's law n = L * mean(O) * T: a
//   fixed point, found by iteration. n above max_num_seqs, or no fixed point, is overload.
// - TTFT of request i = W + p * I_i + c_i * min(1, n) * D(max(1, n)) (each of its c_i chunks
//   may be followed by a decode step), with W the mean M/D/1 queueing delay of the prefill
//   path: W = rho * S / (2 (1 - rho)), S its mean service time, rho = L * S.
// - The SLO holds when the attainment quantile (e.g. P90) of TTFT over the trace's requests is
//   within ttft_ms and T within tpot_ms. Every figure grows with L, so the highest L is found by
//   bisection. Queueing variance, preemption and the prefill/decode switch are not modelled:
//   the figure ranks configurations; `sandwich-bench serve` measures the real goodput.
#include <string>
#include <vector>

#include "common/length_trace.h"

namespace sandwich::tuner {

struct ServiceTimes {
  double prefill_ms_per_token = 0;
  double decode_ms_1 = 0;            // one decode step of one sequence
  double decode_ms_batch = 0;        // one decode step of decode_batch sequences
  int decode_batch = 1;              // the batch decode_ms_batch was measured at
  double decode_ms(double b) const;  // D(b), b >= 1
};

struct ServingLimits {
  int max_num_seqs = 64;    // sequences decoding together at most
  int prefill_chunk = 512;  // prompt tokens per prefill step
};

struct SloLimits {
  double ttft_ms = 0, tpot_ms = 0;
  double attainment = 0.9;  // the TTFT quantile that must meet ttft_ms
};

struct LoadEstimate {
  double rate = 0;          // requests per second
  double ttft_ms = 0;       // the attainment quantile over the trace
  double tpot_ms = 0;       // time per output token
  double batch = 0;         // sequences decoding together (mean)
  bool overloaded = false;  // no steady state at this rate
};

struct GoodputEstimate {
  double rate = 0;         // the highest rate meeting the SLO (0: none does)
  LoadEstimate at_rate;    // the figures at that rate (at rate 0+ when none meets it)
  std::string limited_by;  // "TTFT", "TPOT", "the batch limit" or "overload"
};

// The figures at one rate; throws std::invalid_argument on an empty trace or non-positive times.
LoadEstimate estimate_load(const ServiceTimes& t, const std::vector<LengthPair>& trace,
                           const ServingLimits& limits, double attainment, double rate);

GoodputEstimate estimate_goodput(const ServiceTimes& t, const std::vector<LengthPair>& trace,
                                 const ServingLimits& limits, const SloLimits& slo);

}  // namespace sandwich::tuner
