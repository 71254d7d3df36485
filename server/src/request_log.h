#pragma once
// The log's lines about serving: one per finished request, and the engine's periodic summary
// (as vLLM's "Avg prompt throughput ..." line).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/http_server.h"

namespace sandwich::server {

struct RequestRecord {
  std::string id;  // the response's id (cmpl-..., chatcmpl-...)
  int status = 200;
  int64_t prompt_tokens = 0, output_tokens = 0;  // all choices
  std::optional<double> ttft_seconds;            // none when no token came
  double e2e_seconds = 0;
  std::string finish_reason;  // the choices' reasons, distinct ones joined by ','
};

// "<id> finished: status 200, prompt 12 tokens, output 34 tokens, TTFT 12.3 ms, TPOT 4.56 ms,
// E2E 160.8 ms, finish stop". TPOT is (E2E - TTFT) / (output - 1); "-" below two tokens.
std::string request_log_message(const RequestRecord& r);

// The access log's line for every answered request, refused ones included: "POST
// /v1/completions 400 1.2 ms" (a long path is cut).
std::string http_exchange_message(const HttpExchange& e);
// Logs it: at info, but probes (/health and /metrics answered 200) at debug, as a load balancer
// or Prometheus would otherwise fill the log.
void log_http_exchange(const HttpExchange& e);

// vLLM's words for a request's fields that no parser read: "The following fields were present
// in the request but ignored: {'a', 'b'}".
std::string ignored_fields_message(const std::vector<std::string>& names);

// The engine's line for an interval of `seconds` from `before` to `now`: prompt and generation
// tokens/s, running and waiting sequences, KV-cache use; nullopt when nothing ran or waited.
std::optional<std::string> engine_stats_message(const engine::SchedulerStats& before,
                                                const engine::SchedulerStats& now, double seconds);

// Logs engine_stats_message every interval on its own thread until stop() or destruction.
class EngineStatsLogger {
 public:
  EngineStatsLogger(const engine::Scheduler& scheduler, double interval_seconds);
  ~EngineStatsLogger();
  void stop();

 private:
  void run();
  const engine::Scheduler& scheduler_;
  const std::chrono::duration<double> interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sandwich::server
