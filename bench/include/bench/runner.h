#pragma once
// One benchmark run against one server: requests released at their arrival times, at most
// max_concurrency in flight, each streamed and recorded. Failures are recorded, never thrown.
#include <functional>
#include <string>
#include <vector>

#include "bench/http_client.h"
#include "bench/metrics.h"
#include "bench/openai_client.h"

namespace sandwich::bench {

struct BenchRequest {
  std::string prompt;
  int input_len = 0;      // the trace's prompt length
  int prompt_tokens = 0;  // the built prompt's length (by the server's tokenizer or the estimate)
  int max_tokens = 0;     // the trace's output length
};

// Where a run stands, as each request ends.
struct RunProgress {
  size_t done = 0, failed = 0, total = 0;  // failed is part of done
  double elapsed_s = 0;                    // since the run started
};

struct RunOptions {
  Url url;
  Api api = Api::Completions;
  std::string model;
  std::string extra_body;   // JSON object merged into each request body
  std::string bearer;       // API key
  int max_concurrency = 0;  // 0: no limit
  double timeout_s = 600;   // per request, from sending it to its last byte
  // Called as each request ends (on an I/O thread, never two at once).
  std::function<void(const RunProgress&)> progress;
};

// requests[i] is released at arrivals[i] seconds after the start; a released request waits
// for a concurrency slot, and its TTFT and E2E count from when it is sent. Returns one record
// per request, in request order, with times relative to the start.
std::vector<RequestRecord> run_requests(HttpClient& client, const RunOptions& options,
                                        const std::vector<BenchRequest>& requests,
                                        const std::vector<double>& arrivals);

}  // namespace sandwich::bench
