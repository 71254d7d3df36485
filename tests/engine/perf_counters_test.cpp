// The perf_event wrapper behind `sandwich-bench engine --counters`: the figures from readings
// (multiplexed ones scaled), the one-line reasons a counter is unavailable, the memory-bus events
// found in a sysfs tree, and a software counter really counting every thread and process started
// after it opened.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "runtime/bench_counters.h"
#include "runtime/perf_event.h"
#include "runtime/pmu_sysfs_events.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

TEST(PerfCounters, ScalesAMultiplexedCountByEnabledOverRunning) {
  EXPECT_EQ(scaled_count({1000, 400, 400}), 1000.0);
  EXPECT_EQ(scaled_count({1000, 400, 100}), 4000.0);   // counted a quarter of the time
  EXPECT_EQ(scaled_count({0, 0, 0}), 0.0);             // never enabled: nothing happened
  EXPECT_EQ(scaled_count({0, 500, 0}), std::nullopt);  // enabled but never ran: unknown
  EXPECT_DOUBLE_EQ(running_fraction({1, 400, 100}), 0.25);
  EXPECT_DOUBLE_EQ(running_fraction({0, 0, 0}), 1);
  const PerfReading d = PerfReading{1500, 900, 700} - PerfReading{500, 400, 300};
  EXPECT_EQ(d.value, 1000u);
  EXPECT_EQ(d.time_enabled, 500u);
  EXPECT_EQ(d.time_running, 400u);
}

TEST(PerfCounters, FiguresPerKiloInstructionFromScaledReadings) {
  const std::vector<RoleReading> r = {
      {CounterRole::Cycles, "cycles", {2'000'000, 100, 100}},
      {CounterRole::Instructions, "instructions", {1'000'000, 100, 50}},  // x2: 2,000,000
      {CounterRole::LlcMisses, "cache-misses", {10'000, 100, 100}},
      // Two memory controllers add up.
      {CounterRole::BusAccesses, "imc0", {3'000, 100, 100}},
      {CounterRole::BusAccesses, "imc1", {1'000, 100, 100}},
      {CounterRole::TaskClock, "task-clock", {3'000'000'000, 100, 100}},
      {CounterRole::ContextSwitches, "context-switches", {42, 100, 100}},
  };
  const CounterFigures f = counter_figures(r, 2.0);
  EXPECT_DOUBLE_EQ(*f.ipc, 1.0);
  EXPECT_DOUBLE_EQ(*f.llc_mpki, 5.0);
  EXPECT_DOUBLE_EQ(*f.bus_pki, 2.0);
  EXPECT_DOUBLE_EQ(f.running_fraction, 0.5);
  EXPECT_DOUBLE_EQ(*f.cpus_busy, 1.5);
  EXPECT_DOUBLE_EQ(*f.context_switches, 42);
}

// Without bus counters the LLC misses stand in; without hardware counters only the software
// figures remain.
TEST(PerfCounters, FiguresWithCountersMissing) {
  const std::vector<RoleReading> proxy = {
      {CounterRole::Cycles, "cycles", {4000, 10, 10}},
      {CounterRole::Instructions, "instructions", {2000, 10, 10}},
      {CounterRole::LlcMisses, "cache-misses", {30, 10, 10}},
  };
  const CounterFigures p = counter_figures(proxy, 1.0);
  EXPECT_DOUBLE_EQ(*p.ipc, 0.5);
  EXPECT_DOUBLE_EQ(*p.bus_pki, *p.llc_mpki);
  const std::vector<RoleReading> soft = {
      {CounterRole::TaskClock, "task-clock", {500'000'000, 10, 10}}};
  const CounterFigures s = counter_figures(soft, 1.0);
  EXPECT_FALSE(s.ipc || s.llc_mpki || s.bus_pki || s.context_switches);
  EXPECT_DOUBLE_EQ(*s.cpus_busy, 0.5);
  // A counter that never ran has no figure rather than a wrong one.
  const std::vector<RoleReading> starved = {
      {CounterRole::Cycles, "cycles", {0, 10, 0}},
      {CounterRole::Instructions, "instructions", {2000, 10, 10}},
  };
  EXPECT_FALSE(counter_figures(starved, 1.0).ipc);
  EXPECT_DOUBLE_EQ(counter_figures(starved, 1.0).running_fraction, 0);
}

TEST(PerfCounters, SaysWhyACounterIsUnavailableAndWhatToSet) {
  const PerfEventSpec cycles{"cycles", 0, 0, 0, 0, std::nullopt};
  const std::string denied = perf_open_error(cycles, EACCES, 3);
  EXPECT_NE(denied.find("cycles unavailable: not permitted (kernel.perf_event_paranoid is 3)"),
            std::string::npos)
      << denied;
  EXPECT_NE(denied.find("sudo sysctl kernel.perf_event_paranoid=2"), std::string::npos) << denied;
  const PerfEventSpec imc{"uncore_imc_0/cas_count_read/ cpu0", 14, 0x304, 0, 0, 0};
  const std::string system_wide = perf_open_error(imc, EPERM, 2);
  EXPECT_NE(system_wide.find("system-wide counters need kernel.perf_event_paranoid <= 0"),
            std::string::npos)
      << system_wide;
  // Allowed by the sysctl and still refused: a container's seccomp profile.
  EXPECT_NE(perf_open_error(cycles, EPERM, 1).find("seccomp"), std::string::npos);
  EXPECT_NE(perf_open_error(cycles, ENOENT).find("cycles unavailable: "), std::string::npos);
  EXPECT_NE(perf_open_error(cycles, ENOSYS).find("no perf_event_open"), std::string::npos);
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

TEST(PerfCounters, EncodesSysfsEventTermsWithThePmuFormat) {
  const auto format = [](std::string_view field) -> std::string {
    if (field == "event") return "config:0-7";
    if (field == "umask") return "config:8-15";
    if (field == "edge") return "config:18";
    if (field == "split") return "config1:0-3,8-11";
    return "";
  };
  const PmuConfigWords w = encode_pmu_event("event=0x04,umask=0x03", format);
  EXPECT_EQ(w.config, 0x0304u);
  EXPECT_EQ(encode_pmu_event("event=0xff,edge", format).config, 0xffu | 1u << 18);
  EXPECT_EQ(encode_pmu_event("split=0xab", format).config1, 0x0a0bu);
  EXPECT_EQ(encode_pmu_event("config=0x1234", format).config, 0x1234u);
  EXPECT_THROW(encode_pmu_event("bogus=1", format), std::invalid_argument);
  EXPECT_THROW(encode_pmu_event("event=0x100", format), std::invalid_argument);  // 9 bits
  EXPECT_THROW(encode_pmu_event("event=zz", format), std::invalid_argument);
}

// Two Intel memory controllers, each named once per socket in its cpumask; the free-running
// ones, where both exist, are preferred so that nothing is counted twice.
TEST(PerfCounters, FindsTheMemoryControllersInSysfs) {
  test::TempDir dir;
  EXPECT_TRUE(find_memory_bus_events(dir.path()).empty());
  for (const char* imc : {"uncore_imc_0", "uncore_imc_1"}) {
    write_file(dir / imc / "type", "17");
    write_file(dir / imc / "cpumask", "0,28");
    write_file(dir / imc / "format/event", "config:0-7");
    write_file(dir / imc / "format/umask", "config:8-15");
    write_file(dir / imc / "events/cas_count_read", "event=0x04,umask=0x03");
    write_file(dir / imc / "events/cas_count_read.scale", "6.103515625e-5");
    write_file(dir / imc / "events/cas_count_write", "event=0x04,umask=0x0c");
    write_file(dir / imc / "events/clockticks", "event=0x00,umask=0x00");
  }
  write_file(dir / "cpu/type", "4");
  const std::vector<SysfsPmuEvent> found = find_memory_bus_events(dir.path());
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].pmu, "uncore_imc_0");
  EXPECT_EQ(found[0].event, "cas_count_read");
  EXPECT_EQ(found[0].type, 17u);
  EXPECT_EQ(found[0].words.config, 0x0304u);
  EXPECT_EQ(found[1].event, "cas_count_write");
  EXPECT_EQ(found[1].words.config, 0x0c04u);
  EXPECT_EQ(found[0].cpus, (std::vector<int>{0, 28}));
  EXPECT_EQ(found[3].pmu, "uncore_imc_1");

  write_file(dir / "uncore_imc_free_running_0/type", "18");
  write_file(dir / "uncore_imc_free_running_0/format/event", "config:0-7");
  write_file(dir / "uncore_imc_free_running_0/format/umask", "config:8-15");
  write_file(dir / "uncore_imc_free_running_0/events/data_read", "event=0xff,umask=0x20");
  write_file(dir / "uncore_imc_free_running_0/events/data_write", "event=0xff,umask=0x21");
  const std::vector<SysfsPmuEvent> free_running = find_memory_bus_events(dir.path());
  ASSERT_EQ(free_running.size(), 2u);
  EXPECT_EQ(free_running[0].event, "data_read");
  EXPECT_EQ(free_running[0].cpus, (std::vector<int>{0}));  // no cpumask: CPU 0
}

// Burns this thread's CPU time for about `ms` milliseconds.
void spin_cpu(int ms) {
  timespec t0{}, t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  volatile uint64_t sink = 0;
  do {
    for (int i = 0; i < 10000; ++i) sink = sink + i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1'000'000 < ms);
}

// task-clock (a software counter every Linux kernel gives, in a VM too), opened disabled before
// two threads and a process that forks a grandchild (as the spawner forks the ranks) exist, then
// enabled: it counts their CPU time, not the idle parent's.
TEST(PerfCounters, ASoftwareCounterCountsEveryThreadAndProcessStartedAfterIt) {
  std::optional<PerfEvent> clock;
  try {
    clock.emplace(PerfEventSpec{"task-clock", 1, 1, 0, 0, std::nullopt});
  } catch (const PerfEventUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      spin_cpu(50);
    });
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    char c;
    (void)!::read(pipe_fds[0], &c, 1);  // until the counter is enabled
    const pid_t grandchild = ::fork();
    spin_cpu(50);
    if (grandchild > 0) ::waitpid(grandchild, nullptr, 0);
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  clock->enable();
  go.store(true);
  (void)!::write(pipe_fds[1], "x", 1);
  for (auto& t : threads) t.join();
  ::waitpid(child, nullptr, 0);
  clock->disable();
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  const PerfReading r = clock->read();
  const double seconds = *scaled_count(r) / 1e9;
  // 2 threads + child + grandchild, 0.05 s of CPU each; the parent only waited.
  std::cout << "task-clock of 2 threads, a child and a grandchild, 0.05 s of CPU each: " << seconds
            << " s\n";
  EXPECT_GT(seconds, 0.18) << r.value;
  EXPECT_LT(seconds, 0.6) << r.value;
  // Disabled: nothing more counts.
  spin_cpu(50);
  EXPECT_EQ(clock->read().value, r.value);
}

}  // namespace
}  // namespace sandwich::engine
