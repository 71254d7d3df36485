// The thread team: every thread runs each region once, barriers separate phases, regions run
// back to back and after the workers have gone to sleep.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/thread_team.h"

namespace sandwich::kernels {
namespace {

TEST(ThreadTeam, EveryThreadRunsEachRegionOnce) {
  for (int n : {1, 2, 3}) {
    ThreadTeam team(n);
    EXPECT_EQ(team.size(), n);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      team.run([&](int tid, int nt) {
        EXPECT_EQ(nt, n);
        hits[tid].fetch_add(1);
      });
      for (int t = 0; t < n; ++t) ASSERT_EQ(hits[t].load(), 1) << "thread " << t << " rep " << rep;
    }
  }
}

TEST(ThreadTeam, BarrierSeparatesPhases) {
  ThreadTeam team(3);
  std::vector<int> a(3, 0), b(3, 0);
  for (int rep = 0; rep < 100; ++rep) {
    team.run([&](int tid, int nt) {
      a[tid] = rep;
      team.barrier();
      // Every thread sees every other thread's first-phase write.
      int s = 0;
      for (int t = 0; t < nt; ++t) s += a[t];
      b[tid] = s;
      team.barrier();
    });
    for (int t = 0; t < 3; ++t) ASSERT_EQ(b[t], 3 * rep);
  }
}

TEST(ThreadTeam, ParallelForCoversTheRangeOnce) {
  ThreadTeam team(2);
  std::vector<std::atomic<int>> seen(1001);
  team.parallel_for(1001, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) seen[i].fetch_add(1);
  });
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);
}

TEST(ThreadTeam, WakesSleepingWorkers) {
  ThreadTeam team(2);
  std::atomic<int> runs{0};
  team.run([&](int, int) { runs.fetch_add(1); });
  // Long enough for the workers to stop spinning and sleep on the futex.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  team.run([&](int, int) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 4);
}

TEST(ThreadTeam, PinsToGivenCpus) {
  const unsigned hw = std::thread::hardware_concurrency();
  ThreadTeam team(1, {static_cast<int>(hw > 1 ? 1 : 0)});
  std::atomic<int> ran{0};
  team.run([&](int, int) { ran = 1; });
  EXPECT_EQ(ran.load(), 1);
  EXPECT_THROW(ThreadTeam(2, {0}), std::invalid_argument);
  EXPECT_THROW(ThreadTeam(0), std::invalid_argument);
}

// Run in a child process: with the address space capped the OS refuses thread stacks part way
// through the team. Exits 0 when that is an exception naming the problem.
[[noreturn]] void start_team_without_room_for_it() {
  long pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  // Room for a few thread stacks (8 MiB each by default), not for 256 of them.
  const rlim_t cap =
      static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (64 << 20);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = cap;
  if (setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(0);  // cannot test here: nothing to show
  try {
    ThreadTeam team(256);
  } catch (const std::runtime_error& e) {
    std::_Exit(std::string(e.what()).find("cannot start thread") != std::string::npos ? 0 : 4);
  }
  std::_Exit(3);
}

// The threads already started are joined and the caller gets an exception, where a joinable
// std::thread left behind would have called std::terminate.
TEST(ThreadTeamDeathTest, RefusedThreadIsAnErrorNotATerminate) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_team_without_room_for_it(), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sandwich::kernels
