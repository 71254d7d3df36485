// The thread team: every thread runs each region once, barriers separate phases, regions run
// back to back and after the workers have gone to sleep.
#include <atomic>
#include <chrono>
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

}  // namespace
}  // namespace sandwich::kernels
