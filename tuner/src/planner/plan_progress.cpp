#include "tuner/planner/plan_progress.h"

#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "tuner/time_text.h"

namespace sandwich::tuner {

PlanProgress::PlanProgress(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}

void PlanProgress::stage(int index, const std::string& name, const std::string& what) {
  end_line();
  index_ = index;
  name_ = name;
  stage_start_ = Clock::now();
  last_plain_ = stage_start_;
  if (!quiet_)
    std::cerr << "[" << index << "/" << kPlanStages << " " << name << "] " << what << "\n";
}

void PlanProgress::step(int n, int total, const std::string& what, double remaining) {
  if (quiet_) return;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - stage_start_).count();
  if (remaining < 0 && n > 0) remaining = elapsed / n * (total - n);
  std::ostringstream os;
  os << "[" << index_ << "/" << kPlanStages << " " << name_ << "] step " << n << " of " << total
     << ": " << what << "  elapsed " << clock_text(elapsed) << "  remaining ~"
     << (remaining >= 0 ? clock_text(remaining) : std::string("?"));
  if (tty_) {
    std::cerr << "\r\033[K" << os.str() << std::flush;
    open_ = true;
  } else if (now - last_plain_ > std::chrono::seconds(60)) {
    last_plain_ = now;
    std::cerr << os.str() << "\n";
  }
}

void PlanProgress::done(const std::string& what) {
  end_line();
  if (!quiet_)
    std::cerr << "[" << index_ << "/" << kPlanStages << " " << name_ << "] done in " << std::fixed
              << std::setprecision(1) << seconds() << " s" << (what.empty() ? "" : ": ") << what
              << "\n";
}

void PlanProgress::note(const std::string& line) {
  end_line();
  if (!quiet_) std::cerr << line << "\n";
}

double PlanProgress::seconds() const {
  return std::chrono::duration<double>(Clock::now() - stage_start_).count();
}

void PlanProgress::end_line() {
  if (open_) std::cerr << "\n";
  open_ = false;
}

}  // namespace sandwich::tuner
