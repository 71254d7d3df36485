#pragma once
// A fixed team of pinned worker threads that run one parallel region at a time.
// Workers spin briefly and then sleep on a futex, so idle cores cost nothing while
// back-to-back regions (one per GEMM in a forward pass) start in well under a microsecond.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/partition.h"

namespace sandwich::kernels {

class ThreadTeam {
 public:
  // n_threads >= 1; the calling thread takes part as thread 0. If cpus is non-empty it must hold
  // n_threads CPU ids and thread i is pinned to cpus[i] (the caller is pinned at the first run()).
  // Throws std::runtime_error (with every started thread joined) if the OS refuses a thread.
  explicit ThreadTeam(int n_threads, std::vector<int> cpus = {});
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return n_; }
  const std::vector<int>& cpus() const { return cpus_; }

  // Runs fn(tid, n_threads) on every thread of the team and returns when all have finished.
  // Must be called from the thread that owns the team; regions do not nest.
  template <class F>
  void run(F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run_erased([](void* ctx, int tid, int n) { (*static_cast<Fn*>(ctx))(tid, n); },
               const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into contiguous chunks, one per thread: fn(begin, end, tid).
  template <class F>
  void parallel_for(int64_t n, F&& fn) {
    run([&](int tid, int nt) {
      const IndexRange r = partition(n, tid, nt);
      if (r.begin < r.end) fn(r.begin, r.end, tid);
    });
  }

  // Barrier for all threads of the team, callable only inside run().
  void barrier();

 private:
  using Trampoline = void (*)(void*, int, int);
  void run_erased(Trampoline t, void* ctx);
  void worker_main(int tid);
  void stop_workers();

  int n_;
  std::vector<int> cpus_;
  bool caller_pinned_ = false;
  // The caller's CPUs before it was pinned, restored when the team ends on that thread: a
  // program's main thread must not stay on one CPU (its children would inherit it).
  std::thread::id caller_;
  std::vector<uint8_t> caller_mask_;
  std::vector<std::thread> workers_;

  alignas(64) std::atomic<uint32_t> epoch_{0};
  alignas(64) std::atomic<uint32_t> done_{0};
  alignas(64) std::atomic<uint32_t> sleepers_{0};
  alignas(64) std::atomic<uint32_t> bar_count_{0};
  alignas(64) std::atomic<uint32_t> bar_gen_{0};
  alignas(64) std::atomic<uint32_t> bar_sleepers_{0};
  std::atomic<uint32_t> main_sleeping_{0};
  Trampoline fn_ = nullptr;
  void* ctx_ = nullptr;
  bool stop_ = false;
};

// Pins the calling thread to one CPU; returns false if the OS refused.
bool pin_current_thread(int cpu);

}  // namespace sandwich::kernels
