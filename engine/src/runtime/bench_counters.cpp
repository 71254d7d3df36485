#include "runtime/bench_counters.h"

#include <algorithm>
#include <cctype>

#include "runtime/pmu_sysfs_events.h"

namespace sandwich::engine {
namespace {

// perf_event_attr types and configs (linux/perf_event.h), spelled out so that the figures'
// code builds where that header does not exist.
constexpr uint32_t kTypeHardware = 0, kTypeSoftware = 1, kTypeHwCache = 3;
constexpr uint64_t kHwCycles = 0, kHwInstructions = 1, kHwCacheMisses = 3;
constexpr uint64_t kSwTaskClock = 1, kSwContextSwitches = 3;
// PERF_TYPE_HW_CACHE: cache id | op << 8 | result << 16.
constexpr uint64_t kCacheLL = 2, kOpRead = 0, kOpPrefetch = 2, kResultMiss = 1;

constexpr uint64_t ll_miss(uint64_t op) {
  return kCacheLL | op << 8 | kResultMiss << 16;
}

// The scaled sum of a role's counters; nullopt if there are none or one never ran.
std::optional<double> total(std::span<const RoleReading> readings, CounterRole role) {
  std::optional<double> sum;
  for (const RoleReading& r : readings) {
    if (r.role != role) continue;
    const std::optional<double> v = scaled_count(r.reading);
    if (!v) return std::nullopt;
    sum = sum.value_or(0) + *v;
  }
  return sum;
}

bool has_role(std::span<const RoleReading> readings, CounterRole role) {
  return std::any_of(readings.begin(), readings.end(),
                     [&](const RoleReading& r) { return r.role == role; });
}

// "uncore_imc_3" -> "uncore_imc".
std::string pmu_family(std::string pmu) {
  while (!pmu.empty() &&
         (std::isdigit(static_cast<unsigned char>(pmu.back())) || pmu.back() == '_'))
    pmu.pop_back();
  return pmu;
}

}  // namespace

CounterFigures counter_figures(std::span<const RoleReading> readings, double wall_seconds) {
  CounterFigures f;
  f.wall_seconds = wall_seconds;
  for (const RoleReading& r : readings)
    f.running_fraction = std::min(f.running_fraction, running_fraction(r.reading));
  const std::optional<double> cycles = total(readings, CounterRole::Cycles);
  const std::optional<double> instructions = total(readings, CounterRole::Instructions);
  const std::optional<double> llc = total(readings, CounterRole::LlcMisses);
  const std::optional<double> bus = has_role(readings, CounterRole::BusAccesses)
                                        ? total(readings, CounterRole::BusAccesses)
                                        : llc;
  if (cycles && instructions && *cycles > 0) f.ipc = *instructions / *cycles;
  if (instructions && *instructions > 0) {
    const double kilo = *instructions / 1000;
    if (llc) f.llc_mpki = *llc / kilo;
    if (bus) f.bus_pki = *bus / kilo;
  }
  const std::optional<double> task_ns = total(readings, CounterRole::TaskClock);
  if (task_ns && wall_seconds > 0) f.cpus_busy = *task_ns / 1e9 / wall_seconds;
  f.context_switches = total(readings, CounterRole::ContextSwitches);
  return f;
}

BenchCounters::BenchCounters() {
  open(CounterRole::Cycles, {"cycles", kTypeHardware, kHwCycles, 0, 0, std::nullopt});
  open(CounterRole::Instructions,
       {"instructions", kTypeHardware, kHwInstructions, 0, 0, std::nullopt});
  open(CounterRole::LlcMisses, {"cache-misses", kTypeHardware, kHwCacheMisses, 0, 0, std::nullopt});
  open_bus_counters();
  open(CounterRole::TaskClock, {"task-clock", kTypeSoftware, kSwTaskClock, 0, 0, std::nullopt});
  open(CounterRole::ContextSwitches,
       {"context-switches", kTypeSoftware, kSwContextSwitches, 0, 0, std::nullopt, true});
}

void BenchCounters::open(CounterRole role, PerfEventSpec spec) {
  try {
    counters_.push_back({role, PerfEvent(std::move(spec)), {}});
  } catch (const PerfEventUnavailable& e) {
    unavailable_.push_back(e.what());
  }
}

// The memory controllers' counters where sysfs names them (every one, or none: a controller
// left out would hide its traffic), else LLC misses, demand and prefetch, as the proxy.
void BenchCounters::open_bus_counters() {
  const std::vector<SysfsPmuEvent> bus = find_memory_bus_events();
  std::string names;
  for (const SysfsPmuEvent& e : bus)
    if (names.find(e.event) == std::string::npos) names += (names.empty() ? "" : "+") + e.event;
  std::vector<Counter> opened;
  try {
    for (const SysfsPmuEvent& e : bus)
      for (int cpu : e.cpus)
        opened.push_back({CounterRole::BusAccesses,
                          PerfEvent({e.pmu + "/" + e.event + "/ cpu" + std::to_string(cpu), e.type,
                                     e.words.config, e.words.config1, e.words.config2, cpu}),
                          {}});
  } catch (const PerfEventUnavailable& why) {
    unavailable_.push_back("memory-bus counters (" + pmu_family(bus.front().pmu) + "*: " + names +
                           "): " + why.what() + "; LLC misses stand in for them");
    opened.clear();
  }
  if (!opened.empty()) {
    bus_source_ = pmu_family(bus.front().pmu) + "* " + names + " (system-wide, " +
                  std::to_string(opened.size()) + " counters)";
    for (auto& c : opened) counters_.push_back(std::move(c));
    return;
  }
  const size_t before = counters_.size();
  open(CounterRole::BusAccesses,
       {"LLC-load-misses", kTypeHwCache, ll_miss(kOpRead), 0, 0, std::nullopt});
  open(CounterRole::BusAccesses,
       {"LLC-prefetch-misses", kTypeHwCache, ll_miss(kOpPrefetch), 0, 0, std::nullopt});
  std::string proxy;
  for (size_t i = before; i < counters_.size(); ++i)
    proxy += (proxy.empty() ? "" : " + ") + counters_[i].event.spec().name;
  bus_source_ = "proxy, " +
                (proxy.empty() ? "cache-misses as in the LLC column" : "LLC misses: " + proxy) +
                "; " +
                (bus.empty() ? "no memory-controller counters in sysfs"
                             : "memory-controller counters not allowed (see below)");
}

void BenchCounters::begin_test() {
  wall_seconds_ = 0;
  for (Counter& c : counters_) c.start = c.event.read();
}

void BenchCounters::resume() {
  for (Counter& c : counters_) c.event.enable();
  resumed_ = std::chrono::steady_clock::now();
}

void BenchCounters::pause() {
  wall_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - resumed_).count();
  for (Counter& c : counters_) c.event.disable();
}

CounterFigures BenchCounters::end_test() {
  last_.clear();
  for (const Counter& c : counters_)
    last_.push_back({c.role, c.event.spec().name, c.event.read() - c.start});
  return counter_figures(last_, wall_seconds_);
}

nlohmann::json BenchCounters::last_test_json() const {
  nlohmann::json events = nlohmann::json::object();
  for (const RoleReading& r : last_) {
    const std::optional<double> scaled = scaled_count(r.reading);
    events[r.name] = {{"value", r.reading.value},
                      {"scaled", scaled ? nlohmann::json(*scaled) : nlohmann::json(nullptr)},
                      {"time_enabled_ns", r.reading.time_enabled},
                      {"time_running_ns", r.reading.time_running}};
  }
  return events;
}

nlohmann::json BenchCounters::describe() const {
  nlohmann::json opened = nlohmann::json::array();
  for (const Counter& c : counters_) opened.push_back(c.event.spec().name);
  return {{"scope",
           "user space of this process and of every thread and rank process it starts after the "
           "counters open (inherited), enabled during the measured repetitions only; "
           "memory-controller counters count the whole machine"},
          {"llc_event",
           "cache-misses (PERF_COUNT_HW_CACHE_MISSES: last-level-cache misses on Intel; the "
           "kernel maps it to L2 misses on AMD Zen)"},
          {"bus_source", bus_source_},
          {"opened", opened},
          {"unavailable", unavailable_}};
}

}  // namespace sandwich::engine
