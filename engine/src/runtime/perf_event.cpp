#include "runtime/perf_event.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sandwich::engine {

std::optional<double> scaled_count(const PerfReading& r) {
  if (r.time_running == 0) return r.time_enabled == 0 ? std::optional<double>(0) : std::nullopt;
  const double v = static_cast<double>(r.value);
  if (r.time_running >= r.time_enabled) return v;
  return v * static_cast<double>(r.time_enabled) / static_cast<double>(r.time_running);
}

double running_fraction(const PerfReading& r) {
  if (r.time_enabled == 0) return 1;
  return static_cast<double>(r.time_running) / static_cast<double>(r.time_enabled);
}

PerfReading operator-(const PerfReading& later, const PerfReading& earlier) {
  // Unsigned wrap cannot happen between two reads of one counter; guard anyway.
  auto sub = [](uint64_t a, uint64_t b) { return a >= b ? a - b : 0; };
  return {sub(later.value, earlier.value), sub(later.time_enabled, earlier.time_enabled),
          sub(later.time_running, earlier.time_running)};
}

std::optional<int> perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

std::string perf_open_error(const PerfEventSpec& spec, int err, std::optional<int> paranoid) {
  const std::string head = spec.name + " unavailable: ";
  const bool system_wide = spec.cpu.has_value();
  if (err == EACCES || err == EPERM) {
    const std::string value =
        paranoid ? "kernel.perf_event_paranoid is " + std::to_string(*paranoid) : "";
    // Per-task user-space counting needs <= 2, kernel space <= 1, a system-wide counter <= 0.
    const int need = system_wide ? 0 : spec.kernel_too ? 1 : 2;
    std::string line = head + "not permitted";
    if (!value.empty()) line += " (" + value + ")";
    const char* what = system_wide       ? "system-wide counters"
                       : spec.kernel_too ? "a process's counters of kernel events"
                                         : "a process's counters";
    line += "; " + std::string(what) +
            " need kernel.perf_event_paranoid <= " + std::to_string(need) +
            " (sudo sysctl kernel.perf_event_paranoid=" + std::to_string(need) + ") or CAP_PERFMON";
    if (!paranoid || *paranoid <= need)
      line += ", or a container's seccomp profile forbids perf_event_open";
    return line;
  }
  if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL) {
    std::error_code ec;
    if (spec.type == 0 /* PERF_TYPE_HARDWARE */ || spec.type == 3 /* PERF_TYPE_HW_CACHE */) {
      if (!std::filesystem::exists("/sys/bus/event_source/devices/cpu", ec))
        return head +
               "no hardware PMU here (/sys/bus/event_source/devices has no cpu: a VM without a "
               "virtual PMU?)";
      return head + "this CPU's PMU has no such event (" + std::strerror(err) + ")";
    }
    return head + "the kernel does not offer it (" + std::strerror(err) + ")";
  }
  if (err == ENOSYS) return head + "this kernel has no perf_event_open";
  return head + std::strerror(err);
}

#ifdef __linux__

PerfEvent::PerfEvent(PerfEventSpec spec) : spec_(std::move(spec)) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = spec_.type;
  a.config = spec_.config;
  a.config1 = spec_.config1;
  a.config2 = spec_.config2;
  a.disabled = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  int pid = 0, cpu = -1;
  if (spec_.cpu) {
    pid = -1;  // uncore PMUs count the whole socket and refuse the exclude bits
    cpu = *spec_.cpu;
  } else {
    // Threads and rank processes started later count into this counter.
    a.inherit = 1;
    a.exclude_kernel = spec_.kernel_too ? 0 : 1;
    a.exclude_hv = 1;
  }
  const long fd = ::syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw PerfEventUnavailable(perf_open_error(spec_, err, perf_event_paranoid()));
  }
  fd_ = static_cast<int>(fd);
}

PerfEvent::~PerfEvent() {
  if (fd_ >= 0) ::close(fd_);
}

void PerfEvent::enable() {
  ::ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
}

void PerfEvent::disable() {
  ::ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
}

PerfReading PerfEvent::read() const {
  uint64_t v[3] = {0, 0, 0};
  const ssize_t n = ::read(fd_, v, sizeof v);
  if (n != static_cast<ssize_t>(sizeof v))
    throw std::runtime_error("cannot read counter " + spec_.name + ": " +
                             (n < 0 ? std::strerror(errno) : "short read"));
  return {v[0], v[1], v[2]};
}

#else

PerfEvent::PerfEvent(PerfEventSpec spec) : spec_(std::move(spec)) {
  throw PerfEventUnavailable(spec_.name + " unavailable: perf_event_open is Linux-only");
}
PerfEvent::~PerfEvent() = default;
void PerfEvent::enable() {}
void PerfEvent::disable() {}
PerfReading PerfEvent::read() const {
  return {};
}

#endif

PerfEvent::PerfEvent(PerfEvent&& other) noexcept
    : spec_(std::move(other.spec_)), fd_(std::exchange(other.fd_, -1)) {}

}  // namespace sandwich::engine
