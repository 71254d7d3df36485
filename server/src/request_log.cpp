#include "request_log.h"

#include <cstdio>

#include "common/log.h"

namespace sandwich::server {
namespace {

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

}  // namespace

std::string request_log_message(const RequestRecord& r) {
  std::string tpot = "-";
  if (r.ttft_seconds && r.output_tokens >= 2) {
    char buf[32];
    std::snprintf(
        buf, sizeof buf, "%.2f ms",
        (r.e2e_seconds - *r.ttft_seconds) * 1e3 / static_cast<double>(r.output_tokens - 1));
    tpot = buf;
  }
  return r.id + " finished: status " + std::to_string(r.status) + ", prompt " +
         std::to_string(r.prompt_tokens) + " tokens, output " + std::to_string(r.output_tokens) +
         " tokens, TTFT " + (r.ttft_seconds ? ms(*r.ttft_seconds) : std::string("-")) + ", TPOT " +
         tpot + ", E2E " + ms(r.e2e_seconds) + ", finish " +
         (r.finish_reason.empty() ? std::string("-") : r.finish_reason);
}

std::string http_exchange_message(const HttpExchange& e) {
  constexpr size_t kMaxPath = 200;
  const std::string path = e.path.size() > kMaxPath ? e.path.substr(0, kMaxPath) + "..." : e.path;
  return e.method + " " + path + " " + std::to_string(e.status) + " " + ms(e.seconds);
}

void log_http_exchange(const HttpExchange& e) {
  const bool probe =
      e.status == 200 && e.method == "GET" && (e.path == "/health" || e.path == "/metrics");
  const LogLevel level = probe ? LogLevel::Debug : LogLevel::Info;
  if (log_enabled(level)) log_line(level, "http", http_exchange_message(e));
}

std::string ignored_fields_message(const std::vector<std::string>& names) {
  // The names are the client's: a body of a million keys, or of one huge one, still makes a
  // short line.
  constexpr size_t kMaxNames = 32, kMaxNameBytes = 64;
  std::string list;
  for (size_t i = 0; i < names.size() && i < kMaxNames; ++i) {
    const std::string& n = names[i];
    list += (list.empty() ? "'" : ", '") +
            (n.size() > kMaxNameBytes ? n.substr(0, kMaxNameBytes) + "..." : n) + "'";
  }
  if (names.size() > kMaxNames) list += ", ... (" + std::to_string(names.size()) + " in all)";
  return "The following fields were present in the request but ignored: {" + list + "}";
}

std::optional<std::string> engine_stats_message(const engine::SchedulerStats& before,
                                                const engine::SchedulerStats& now, double seconds) {
  const uint64_t prompt = now.prompt_tokens - before.prompt_tokens;
  const uint64_t generated = now.generation_tokens - before.generation_tokens;
  if (prompt == 0 && generated == 0 && now.running == 0 && now.waiting == 0) return std::nullopt;
  const double s = seconds > 0 ? seconds : 1;
  const double kv =
      now.kv_blocks_total > 0 ? 100.0 * now.kv_blocks_used / now.kv_blocks_total : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "prompt throughput %.1f tokens/s, generation throughput %.1f tokens/s, running %d, "
                "waiting %d, KV cache usage %.1f%%",
                static_cast<double>(prompt) / s, static_cast<double>(generated) / s, now.running,
                now.waiting, kv);
  std::string out = buf;
  // The hit rate of the interval's lookups, as vLLM's line gives it.
  const uint64_t queries = now.prefix_cache_queries - before.prefix_cache_queries;
  if (queries > 0) {
    std::snprintf(buf, sizeof buf, ", prefix cache hit rate %.1f%%",
                  100.0 * static_cast<double>(now.prefix_cache_hits - before.prefix_cache_hits) /
                      static_cast<double>(queries));
    out += buf;
  }
  return out;
}

EngineStatsLogger::EngineStatsLogger(const engine::Scheduler& scheduler, double interval_seconds)
    : scheduler_(scheduler), interval_(interval_seconds) {
  thread_ = std::thread([this] { run(); });
}

EngineStatsLogger::~EngineStatsLogger() {
  stop();
}

void EngineStatsLogger::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineStatsLogger::run() {
  using Clock = std::chrono::steady_clock;
  engine::SchedulerStats before = scheduler_.stats();
  auto t0 = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    const engine::SchedulerStats now = scheduler_.stats();
    const auto t1 = Clock::now();
    if (auto msg =
            engine_stats_message(before, now, std::chrono::duration<double>(t1 - t0).count()))
      log_line(LogLevel::Info, "engine", *msg);
    before = now;
    t0 = t1;
  }
}

}  // namespace sandwich::server
