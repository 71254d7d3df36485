// The preprocessing pool: a bounded queue that refuses at once when full, workers at a lower
// priority, and a stop() that still runs what was queued (each queued request gets its answer).
#include "preprocess_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

namespace sandwich::server {
namespace {

// Holds the workers until open() is called.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(PreprocessPool, RefusesBeyondItsQueueAndRunsWhatItTook) {
  Gate gate;
  std::atomic<int> ran{0};
  PreprocessPool pool(1, 2);
  std::atomic<bool> started{false};
  ASSERT_TRUE(pool.try_submit([&] {
    started = true;
    gate.wait();
    ++ran;
  }));
  while (!started) std::this_thread::yield();
  EXPECT_EQ(pool.busy(), 1);
  EXPECT_TRUE(pool.try_submit([&] { ++ran; }));
  EXPECT_TRUE(pool.try_submit([&] { ++ran; }));
  EXPECT_EQ(pool.queued(), 2u);
  EXPECT_FALSE(pool.try_submit([&] { ++ran; }));  // full: refused at once, not run
  gate.open();
  pool.stop();
  EXPECT_EQ(ran, 3);
  EXPECT_FALSE(pool.try_submit([&] { ++ran; }));  // stopped
}

TEST(PreprocessPool, StopRunsTheQueuedTasks) {
  std::atomic<int> ran{0};
  {
    PreprocessPool pool(2, 100);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.try_submit([&] { ++ran; }));
  }  // the destructor stops
  EXPECT_EQ(ran, 50);
}

TEST(PreprocessPool, WorkersRunBelowTheProcessPriority) {
  const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  std::atomic<int> nice{-100};
  PreprocessPool pool(1, 1, 5);
  ASSERT_TRUE(pool.try_submit(
      [&] { nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }));
  pool.stop();
  // At the lowest priority already (nice 19), it cannot go lower.
  EXPECT_EQ(nice, std::min(19, before + 5));
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))), before);
}

TEST(PreprocessPool, DefaultThreadsAreWithinTwoToEight) {
  EXPECT_GE(default_preprocess_threads(), 2);
  EXPECT_LE(default_preprocess_threads(), 8);
}

}  // namespace
}  // namespace sandwich::server
