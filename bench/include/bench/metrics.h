#pragma once
// Serving-benchmark metrics as pure functions of what the client recorded (timestamps, token
// counts), so that every figure in a report can be checked exactly: per-request TTFT, TPOT,
// inter-token latencies and E2E; percentiles; throughput; SLO attainment and goodput.
// Names: "goodput" is the highest request rate whose run meets the SLO (DistServe's and the
// paper's); the requests per second that met the SLO within one run is the "good request rate".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandwich::bench {

// What the client saw of one request. Times are seconds since the run started (the first
// request's release by the arrival process).
struct RequestRecord {
  int index = 0;
  int input_len = 0;            // prompt length the trace asked for
  int prompt_tokens = 0;        // prompt tokens sent, by the server's tokenizer (or the estimate)
  int max_tokens = 0;           // output length asked for (with ignore_eos)
  double arrival_s = 0;         // released by the arrival process
  double start_s = 0;           // sent, after waiting for a concurrency slot
  std::vector<double> chunk_s;  // arrival of every streamed chunk that carried text
  double end_s = 0;             // response complete, or the failure noticed
  std::optional<int> usage_prompt_tokens, usage_completion_tokens;  // the stream's usage block
  bool ok = false;
  // Why it failed: "connect" (refused/unreachable), "http" (status != 200), "timeout",
  // "disconnected" (connection lost mid-response), "protocol" (not an OpenAI SSE stream),
  // "stream_error" (an error event in the stream), "incomplete" (ended without [DONE] or a
  // finish_reason), "no_output" (finished without any text).
  std::string error_kind;
  int http_status = 0;
  std::string error_message;
};

struct RequestMetrics {
  bool ok = false;
  double ttft_s = 0;             // first text chunk - start
  std::optional<double> tpot_s;  // (e2el - ttft) / (output_tokens - 1); none for <= 1 token
  std::vector<double> itl_s;     // gaps between successive text chunks
  double e2el_s = 0;             // end - start
  int prompt_tokens = 0;         // the usage block's count, else what the client built
  int output_tokens = 0;         // the usage block's count, else the number of text chunks
};

RequestMetrics request_metrics(const RequestRecord& r);

// numpy.percentile's default ("linear"): sort, h = (n - 1) * p / 100,
// result = v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)]).
// p in [0, 100]; an empty input gives 0. +inf values (failed requests) are allowed: a
// percentile that reaches one is +inf.
double percentile(std::vector<double> v, double p);

struct Distribution {
  size_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;  // all 0 when count == 0
};
Distribution distribution(const std::vector<double>& v);

struct Slo {
  double ttft_ms = 0, tpot_ms = 0;  // 0: none given (latencies and throughput only)
  bool given() const { return ttft_ms > 0 && tpot_ms > 0; }
};

// Both targets met, each multiplied by scale. A request with <= 1 output token has no TPOT and
// meets that target (as in vLLM's goodput). A failed request never meets the SLO.
bool meets_slo(const RequestMetrics& m, const Slo& slo, double scale);

// The paper's form of the SLO: P<percentile> TTFT <= target and P<percentile> TPOT <= target,
// the percentile being 100 x the attainment target (P90 for 0.9). Failed requests count as
// infinitely slow in both; requests without a TPOT (<= 1 output token) are left out of the TPOT
// percentile. A percentile that is +inf is written as null in JSON.
struct PercentileSlo {
  double percentile = 90;
  double ttft_ms = 0, tpot_ms = 0;  // the percentiles, with failures as +inf
  bool met = false;                 // both <= their targets x scale
};

// Which form decides whether a run meets the SLO, for goodput.
enum class SloDefinition {
  PerRequest,  // attainment (requests meeting both limits / requests sent) >= the target
  Percentile,  // PercentileSlo::met
};
SloDefinition parse_slo_definition(const std::string& name);  // throws std::invalid_argument
const char* slo_definition_name(SloDefinition d);             // "per-request" or "percentile"

struct Summary {
  int requests = 0, completed = 0, failed = 0;
  std::map<std::string, int> errors;  // failed requests by error_kind
  double duration_s = 0;              // start of the run to the last request's end
  int64_t total_input_tokens = 0, total_output_tokens = 0;  // completed requests only
  double request_throughput = 0;                            // completed / duration
  double output_throughput = 0;                             // output tokens / duration
  double total_token_throughput = 0;                        // (input + output tokens) / duration
  // Over completed requests; times in milliseconds. itl_ms pools every gap of every request.
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms, prompt_tokens, output_tokens;
  Slo slo;
  double slo_scale = 1;
  int good = 0;                // completed and met both SLOs
  double attainment = 0;       // per request: good / requests (failures count as misses)
  double ttft_attainment = 0;  // requests meeting the TTFT limit / requests sent
  double tpot_attainment = 0;  // requests meeting the TPOT limit (or with no TPOT) / requests sent
  PercentileSlo percentile_slo;
  double good_request_rate = 0;  // good / duration, requests per second (not goodput)
  int output_len_mismatch =
      0;  // completed with output tokens != max_tokens (server ignored ignore_eos?)
  int prompt_len_mismatch = 0;  // completed with prompt tokens != the trace's input length
};

// attainment_target sets the percentile of percentile_slo (0.9: P90).
Summary summarize(const std::vector<RequestRecord>& records, const Slo& slo, double slo_scale,
                  double attainment_target = 0.9);

// Whether a run met the SLO under the definition, with this attainment target.
bool run_meets_slo(const Summary& s, SloDefinition definition, double target);

// Fraction of all requests meeting both SLOs at this scale.
double attainment(const std::vector<RequestRecord>& records, const Slo& slo, double scale);

// Goodput of a sweep: the highest tested rate r such that every tested rate <= r keeps
// attainment >= target (so one lucky run above a failing rate does not count). Pairs are
// (rate, attainment) in any order; rate may be +inf. None when the lowest rate already fails.
std::optional<double> goodput_rate(std::vector<std::pair<double, double>> rate_attainment,
                                   double target);
// The same over (rate, met the SLO) pairs.
std::optional<double> goodput_rate(std::vector<std::pair<double, bool>> rate_met);

}  // namespace sandwich::bench
