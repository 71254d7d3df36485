#pragma once
// A run's progress on a terminal: one line rewritten in place ('\r') as requests end, erased
// when the run is over. Nothing is written when stderr is not a terminal (a log or a pipe gets
// the per-run summaries only).
#include <chrono>
#include <mutex>
#include <string>

#include "bench/runner.h"

namespace sandwich::bench {

// "[label] step: done / total done, failed failed, elapsed s", e.g.
// "[sandwich] rate 2 req/s: 120 / 200 done, 3 failed, 12.3 s".
std::string progress_text(const std::string& label, const std::string& step, const RunProgress& p);

class TerminalProgress {
 public:
  // enabled: whether to write at all (default: stderr is a terminal).
  TerminalProgress();
  explicit TerminalProgress(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  // Rewrites the line, at most every 100 ms except for the last request of a run.
  void update(const std::string& label, const std::string& step, const RunProgress& p);
  // Erases the line, so that what is printed next starts on a clean one.
  void clear();

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::mutex mu_;
};

}  // namespace sandwich::bench
