#pragma once
// A wall-time budget as people write it ("30m", "900s", "1h", "1h30m") and the clock that
// tells the stages of a long run how much of it is left.
#include <chrono>
#include <string>

namespace sandwich::tuner {

// Seconds: a sequence of numbers each followed by h, m or s (a bare number is seconds).
// Throws std::invalid_argument naming the text when it is not one, or is not positive.
double parse_duration(const std::string& text);
// "1h05m", "12m30s", "45s".
std::string duration_text(double seconds);

class TimeBudget {
 public:
  // `spent`: seconds already used by an earlier, interrupted run of the same job.
  TimeBudget(double seconds, double spent = 0);
  double total() const { return total_; }
  double used() const;  // spent + elapsed since construction
  double left() const { return total_ - used(); }
  // True once `share` (0..1) of the budget is used.
  bool past(double share) const { return used() >= share * total_; }

 private:
  double total_, spent_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sandwich::tuner
