#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

namespace sandwich::bench {

std::string progress_text(const std::string& label, const std::string& step, const RunProgress& p) {
  char tail[96];
  std::snprintf(tail, sizeof tail, "%zu / %zu done, %zu failed, %.1f s", p.done, p.total, p.failed,
                p.elapsed_s);
  return "[" + label + "] " + step + ": " + tail;
}

TerminalProgress::TerminalProgress() : enabled_(isatty(STDERR_FILENO) == 1) {}

void TerminalProgress::update(const std::string& label, const std::string& step,
                              const RunProgress& p) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  // "\033[K" erases what a longer previous line left on the right.
  std::fprintf(stderr, "\r%s\033[K", progress_text(label, step, p).c_str());
  std::fflush(stderr);
}

void TerminalProgress::clear() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!shown_) return;
  shown_ = false;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace sandwich::bench
