#include "preprocess_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace sandwich::server {

int default_preprocess_threads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 8, 2, 8);
}

PreprocessPool::PreprocessPool(int threads, size_t max_queued, int nice) : max_queued_(max_queued) {
  const int n = std::max(1, threads);
  workers_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) workers_.emplace_back([this, nice] { work(nice); });
}

PreprocessPool::~PreprocessPool() {
  stop();
}

bool PreprocessPool::try_submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void PreprocessPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_)
    if (w.joinable() && w.get_id() != std::this_thread::get_id()) w.join();
}

size_t PreprocessPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

int PreprocessPool::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

void PreprocessPool::work(int nice) {
  // The engine's threads run the forward pass on the cores this process has; a burst of heavy
  // requests preprocessed at their weight would slow every running sequence's tokens. A few
  // nice levels lower, the scheduler gives these workers the cores the engine leaves idle and a
  // fraction (about a third at 5) of a contended one, so they still make progress. Raising one's
  // own nice value needs no privilege; on Linux PRIO_PROCESS with a thread id sets that thread.
  // SCHED_BATCH alone would not do: it changes wake-up preemption, not the share of a core.
  if (nice > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    task();
    task = nullptr;  // what it holds (a request body) goes now, not at the next wait
    lock.lock();
    --busy_;
  }
}

}  // namespace sandwich::server
