#include "kernels/thread_team.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <stdexcept>
#include <string>

#include <immintrin.h>

namespace sandwich::kernels {
namespace {

// About 50-100 microseconds of spinning before sleeping: long enough to bridge the gap between
// consecutive kernels of a forward step, short enough not to burn a core between steps.
constexpr int kSpinIterations = 1 << 14;

void futex_wait(std::atomic<uint32_t>* addr, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* addr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

// Waits until *addr != value: spin, then sleep on the futex.
void wait_change(std::atomic<uint32_t>* addr, uint32_t value, std::atomic<uint32_t>* sleepers) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (addr->load(std::memory_order_acquire) != value) return;
    _mm_pause();
  }
  sleepers->fetch_add(1, std::memory_order_seq_cst);
  while (addr->load(std::memory_order_acquire) == value) futex_wait(addr, value);
  sleepers->fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

ThreadTeam::ThreadTeam(int n_threads, std::vector<int> cpus)
    : n_(n_threads), cpus_(std::move(cpus)) {
  if (n_ < 1) throw std::invalid_argument("thread team needs at least one thread");
  if (!cpus_.empty() && static_cast<int>(cpus_.size()) != n_)
    throw std::invalid_argument("thread team: " + std::to_string(cpus_.size()) +
                                " CPUs given for " + std::to_string(n_) + " threads");
  workers_.reserve(n_ - 1);
  try {
    for (int t = 1; t < n_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
  } catch (const std::exception& e) {
    // The destructor does not run for a half-built team, and a joinable std::thread destroyed
    // with it would terminate the process: stop the workers that did start first.
    const size_t started = workers_.size();
    stop_workers();
    throw std::runtime_error("cannot start thread " + std::to_string(started + 1) +
                             " of a team of " + std::to_string(n_) + " (" + e.what() +
                             "); use fewer threads");
  }
}

ThreadTeam::~ThreadTeam() {
  stop_workers();
  if (caller_pinned_ && !caller_mask_.empty() && caller_ == std::this_thread::get_id())
    sched_setaffinity(0, caller_mask_.size(), reinterpret_cast<cpu_set_t*>(caller_mask_.data()));
}

void ThreadTeam::stop_workers() {
  stop_ = true;
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&epoch_);
  for (auto& w : workers_) w.join();
  workers_.clear();
}

void ThreadTeam::worker_main(int tid) {
  if (!cpus_.empty()) pin_current_thread(cpus_[tid]);
  uint32_t seen = 0;
  for (;;) {
    wait_change(&epoch_, seen, &sleepers_);
    seen = epoch_.load(std::memory_order_acquire);
    if (stop_) return;
    fn_(ctx_, tid, n_);
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == static_cast<uint32_t>(n_ - 1) &&
        main_sleeping_.load(std::memory_order_seq_cst) != 0)
      futex_wake_all(&done_);
  }
}

void ThreadTeam::run_erased(Trampoline t, void* ctx) {
  if (!caller_pinned_) {
    if (!cpus_.empty()) {
      caller_ = std::this_thread::get_id();
      caller_mask_.resize(sizeof(cpu_set_t));
      if (sched_getaffinity(0, caller_mask_.size(),
                            reinterpret_cast<cpu_set_t*>(caller_mask_.data())) != 0)
        caller_mask_.clear();
      pin_current_thread(cpus_[0]);
    }
    caller_pinned_ = true;
  }
  if (n_ == 1) {
    t(ctx, 0, 1);
    return;
  }
  fn_ = t;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) futex_wake_all(&epoch_);
  t(ctx, 0, n_);
  const uint32_t target = static_cast<uint32_t>(n_ - 1);
  for (int i = 0; i < kSpinIterations; ++i) {
    if (done_.load(std::memory_order_acquire) == target) return;
    _mm_pause();
  }
  main_sleeping_.store(1, std::memory_order_seq_cst);
  for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != target;) futex_wait(&done_, d);
  main_sleeping_.store(0, std::memory_order_relaxed);
}

void ThreadTeam::barrier() {
  if (n_ == 1) return;
  const uint32_t gen = bar_gen_.load(std::memory_order_acquire);
  if (bar_count_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n_)) {
    bar_count_.store(0, std::memory_order_relaxed);
    bar_gen_.fetch_add(1, std::memory_order_seq_cst);
    if (bar_sleepers_.load(std::memory_order_seq_cst) != 0) futex_wake_all(&bar_gen_);
    return;
  }
  wait_change(&bar_gen_, gen, &bar_sleepers_);
}

}  // namespace sandwich::kernels
