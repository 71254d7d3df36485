#pragma once
// The worker threads that prepare model requests (JSON body, chat template, tokenizer) so that
// the HTTP I/O threads never do: a heavy request must not hold /health, /metrics or the streams
// of running requests. The queue is bounded, so that a flood of heavy requests is refused at
// once instead of piling up bodies in memory.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sandwich::server {

// Workers when --preprocess-threads is not given: an eighth of the machine's cores, at least 2
// (one slow template does not hold every other request) and at most 8.
int default_preprocess_threads();

class PreprocessPool {
 public:
  // `nice`: how much lower than the process the workers run (see the .cpp for why).
  PreprocessPool(int threads, size_t max_queued, int nice = 5);
  ~PreprocessPool();
  PreprocessPool(const PreprocessPool&) = delete;
  PreprocessPool& operator=(const PreprocessPool&) = delete;

  // Queues `task` for a worker; false (task dropped) when max_queued tasks already wait, or
  // once stop() was called. A task must not throw.
  bool try_submit(std::function<void()> task);
  // Runs what is queued, then joins the workers. Idempotent.
  void stop();

  size_t queued() const;
  int busy() const;
  int threads() const { return static_cast<int>(workers_.size()); }
  size_t max_queued() const { return max_queued_; }

 private:
  void work(int nice);

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  int busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace sandwich::server
