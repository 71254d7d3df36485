#pragma once
// The progress display of `sandwich-tune plan` on stderr: a line rewritten in place when stderr
// is a terminal; otherwise a line when a stage starts and ends and at most one a minute between
// (logs of a long run show it is alive without filling up); nothing when quiet.
#include <chrono>
#include <string>

namespace sandwich::tuner {

// search, measure, kernels, remeasure, choose, write.
constexpr int kPlanStages = 6;

class PlanProgress {
 public:
  explicit PlanProgress(bool quiet);
  void stage(int index, const std::string& name, const std::string& what);
  // Step n of total within the stage; `remaining` < 0: estimated from the steps' pace.
  void step(int n, int total, const std::string& what, double remaining = -1);
  void done(const std::string& what);
  void note(const std::string& line);
  double seconds() const;  // since the stage started

 private:
  using Clock = std::chrono::steady_clock;
  void end_line();
  bool quiet_, tty_, open_ = false;
  int index_ = 0;
  std::string name_;
  Clock::time_point stage_start_, last_plain_;
};

}  // namespace sandwich::tuner
