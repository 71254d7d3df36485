#pragma once
// The hardware counters `sandwich-bench engine --counters` reads around each test (the paper's
// Figure 1: decode memory-bound, prefill compute-bound): IPC, last-level-cache misses and
// memory-bus accesses per kilo-instruction, and how much of the time the kernel let each counter
// count. Opened once before the executors exist, inherited by every thread and rank process the
// run starts afterwards, enabled only while a measured repetition runs. A counter the machine
// does not give (no PMU in a VM, kernel.perf_event_paranoid) is left out with one line saying
// why; the benchmark goes on.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/perf_event.h"

namespace sandwich::engine {

// What a counter stands for in the figures.
enum class CounterRole { Cycles, Instructions, LlcMisses, BusAccesses, TaskClock, ContextSwitches };

struct RoleReading {
  CounterRole role;
  std::string name;
  PerfReading reading;
};

// One test's figures; nullopt where a counter it needs is unavailable or never ran.
struct CounterFigures {
  std::optional<double> ipc, llc_mpki, bus_pki;
  std::optional<double> cpus_busy;         // task-clock / wall time: threads busy on average
  std::optional<double> context_switches;  // over the whole test
  // The least running/enabled of the counters read (1: no multiplexing).
  double running_fraction = 1;
  double wall_seconds = 0;
};

// The figures from a test's readings (each the difference over the test), each counter scaled
// for multiplexing first; the bus accesses of several counters (memory controllers, sockets)
// add up, and without any the LLC misses stand in for them.
CounterFigures counter_figures(std::span<const RoleReading> readings, double wall_seconds);

class BenchCounters {
 public:
  // Opens every counter this machine gives; `unavailable()` says what it does not.
  BenchCounters();
  const std::vector<std::string>& unavailable() const { return unavailable_; }
  // Where the bus column comes from, for people.
  const std::string& bus_source() const { return bus_source_; }

  // A test: begin, then resume/pause around each measured repetition, then end.
  void begin_test();
  void resume();
  void pause();
  CounterFigures end_test();
  // The counters of the last test, for the JSON.
  nlohmann::json last_test_json() const;
  // What is counted and what is not, for the JSON.
  nlohmann::json describe() const;

 private:
  void open(CounterRole role, PerfEventSpec spec);
  void open_bus_counters();

  struct Counter {
    CounterRole role;
    PerfEvent event;
    PerfReading start;
  };
  std::vector<Counter> counters_;
  std::vector<RoleReading> last_;
  std::vector<std::string> unavailable_;
  std::string bus_source_;
  std::chrono::steady_clock::time_point resumed_;
  double wall_seconds_ = 0;
};

}  // namespace sandwich::engine
