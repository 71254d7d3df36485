#include "common/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <vector>

namespace sandwich {
namespace {

std::atomic<LogLevel> g_level{LogLevel::Info};
std::mutex g_mu;  // one whole line at a time
std::function<void(const std::string&)> g_sink;

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug:
      return "DEBUG";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Warning:
      return "WARNING";
    case LogLevel::Error:
      return "ERROR";
  }
  return "?";
}

}  // namespace

std::optional<LogLevel> log_level_named(std::string_view name) {
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warning" || name == "warn") return LogLevel::Warning;
  if (name == "error") return LogLevel::Error;
  return std::nullopt;
}

void set_log_level(LogLevel level) {
  g_level = level;
}
LogLevel log_level() {
  return g_level;
}
bool log_enabled(LogLevel level) {
  return level >= g_level.load(std::memory_order_relaxed);
}

std::string format_log_line(LogLevel level, std::string_view component, std::string_view message,
                            std::chrono::system_clock::time_point when) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  std::string line = std::string(stamp) + " " + level_name(level) + " ";
  line.append(component);
  line += ": ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  return line;
}

void log_line(LogLevel level, std::string_view component, std::string_view message) {
  if (!log_enabled(level)) return;
  const std::string line =
      format_log_line(level, component, message, std::chrono::system_clock::now());
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink) return g_sink(line);
  std::fprintf(stderr, "%s\n", line.c_str());  // one call: one write on an unbuffered stderr
  std::fflush(stderr);
}

void logf(LogLevel level, const char* component, const char* format, ...) {
  if (!log_enabled(level)) return;
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::vector<char> buf(static_cast<size_t>(n > 0 ? n : 0) + 1);
  std::vsnprintf(buf.data(), buf.size(), format, again);
  va_end(again);
  log_line(level, component, std::string_view(buf.data(), buf.size() - 1));
}

void set_log_sink(std::function<void(const std::string& line)> sink) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(sink);
}

}  // namespace sandwich
