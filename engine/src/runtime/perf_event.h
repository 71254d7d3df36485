#pragma once
// One hardware or software counter of Linux's perf_event_open(2), read as a number with the
// times the kernel had it enabled and running (it multiplexes counters when there are more than
// the PMU holds). Elsewhere than Linux every counter is unavailable.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace sandwich::engine {

// The kernel's perf_event_attr type and config of a counter, and where it counts.
struct PerfEventSpec {
  std::string name;  // for people: "cycles", "uncore_imc_0/cas_count_read"
  uint32_t type = 0;
  uint64_t config = 0, config1 = 0, config2 = 0;
  // System-wide on this CPU (uncore counters: pid -1), else this thread and every thread and
  // process it creates after the counter opens (inherit), user space only.
  std::optional<int> cpu;
  // Per-task counters count user space only (what kernel.perf_event_paranoid = 2, a common
  // default, allows), except where the event happens in the kernel (context switches).
  bool kernel_too = false;
};

// What one read(2) of a counter gives (PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING); an inherited
// counter sums its children's.
struct PerfReading {
  uint64_t value = 0;
  uint64_t time_enabled = 0, time_running = 0;  // ns
};

// The count over the whole enabled time: value x enabled / running where the kernel multiplexed
// it; nullopt where it never ran (nothing to scale from).
std::optional<double> scaled_count(const PerfReading& r);
// running / enabled (1 where it was never enabled): how much of the time it really counted.
double running_fraction(const PerfReading& r);
// The difference of two readings of one counter (later - earlier).
PerfReading operator-(const PerfReading& later, const PerfReading& earlier);

// Thrown when a counter cannot be opened; what() says why and what to do, in one line.
class PerfEventUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The one line for a perf_event_open(2) that failed with `err`: forbidden by
// kernel.perf_event_paranoid (its value and what to set it to), no such PMU event (e.g. a VM
// without a virtual PMU), or the system's message.
std::string perf_open_error(const PerfEventSpec& spec, int err,
                            std::optional<int> paranoid = std::nullopt);
// /proc/sys/kernel/perf_event_paranoid, if readable.
std::optional<int> perf_event_paranoid();

class PerfEvent {
 public:
  // Opens the counter disabled. Throws PerfEventUnavailable.
  explicit PerfEvent(PerfEventSpec spec);
  ~PerfEvent();
  PerfEvent(PerfEvent&& other) noexcept;
  PerfEvent& operator=(PerfEvent&&) = delete;
  PerfEvent(const PerfEvent&) = delete;

  const PerfEventSpec& spec() const { return spec_; }
  // Also for the children of an inherited counter.
  void enable();
  void disable();
  PerfReading read() const;

 private:
  PerfEventSpec spec_;
  int fd_ = -1;
};

}  // namespace sandwich::engine
