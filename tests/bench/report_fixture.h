#pragma once
// A ServeReport built by hand, for the tests of the report's text, JSON and plots: one endpoint
// "ep" run at 1 req/s, 2 req/s and all at once, with an SLO of 200 ms TTFT and 100 ms TPOT.
#include <limits>
#include <string>
#include <vector>

#include "bench/serve.h"

namespace sandwich::test {

// A completed request: first token after ttft_ms, then one token every tpot_ms.
inline bench::RequestRecord timed_record(int index, double ttft_ms, double tpot_ms, int tokens) {
  bench::RequestRecord r;
  r.index = index;
  r.ok = true;
  r.input_len = r.prompt_tokens = 8;
  r.max_tokens = tokens;
  r.start_s = r.arrival_s = 0.01 * index;
  for (int k = 0; k < tokens; ++k) r.chunk_s.push_back(r.start_s + (ttft_ms + k * tpot_ms) / 1000);
  r.end_s = r.chunk_s.back();
  return r;
}

inline bench::RunReport run_at(double rate, const std::vector<bench::RequestRecord>& records,
                               const bench::ServeOptions& o) {
  bench::RunReport run;
  run.label = "ep";
  run.url = "http://127.0.0.1:1";
  run.model = "m";
  run.rate = rate;
  run.records = records;
  run.summary = bench::summarize(records, o.slo, o.slo_scale, o.attainment_target);
  run.scale_curve = {{1.0, run.summary.attainment}};
  return run;
}

// TTFTs of a few ms: far below the 200 ms SLO.
inline bench::ServeReport hand_made_report() {
  bench::ServeReport r;
  bench::ServeOptions& o = r.options;
  o.slo = {200, 100};
  o.rates = {1, 2, std::numeric_limits<double>::infinity()};
  r.scales = {1.0};
  r.max_model_len = 64;
  r.lengths = {{8, 4}, {8, 4}};
  bench::EndpointReport e;
  e.label = "ep";
  e.url = "http://127.0.0.1:1";
  e.model = "m";
  e.tokenizer = "vllm";
  e.prompts = e.prompts_exact = 2;
  e.goodput_rate = 2;
  r.endpoints = {e};
  for (double rate : o.rates)
    r.runs.push_back(run_at(rate, {timed_record(0, 2, 1, 4), timed_record(1, 5, 2, 4)}, o));
  return r;
}

}  // namespace sandwich::test
