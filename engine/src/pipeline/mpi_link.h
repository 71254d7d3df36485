#pragma once
// The nodes' MPI job, as the pipeline uses it: byte messages between nodes, sent without
// blocking and received with a deadline, errors returned (never fatal) and reported naming the
// node. One thread at a time calls it (MPI_THREAD_SERIALIZED at least).
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandwich::engine::pipeline {

using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

// A node that did not answer in time.
struct NodeTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class MpiLink {
 public:
  MpiLink();   // MPI_Init_thread
  ~MpiLink();  // MPI_Finalize, unless aborted
  MpiLink(const MpiLink&) = delete;
  MpiLink& operator=(const MpiLink&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "node 1 (hostname)"
  std::string name(int node) const;

  // Queues `bytes` to `to` (MPI_Isend); the buffer is kept until the send completes.
  void send(int to, int tag, Bytes bytes);
  // The next message from `from` with `tag`; throws NodeTimeout past `deadline` (`what`: what was
  // awaited, for the message) and std::runtime_error on an MPI error.
  // `from` may be kAnySource; `source` (if given) gets the sender. `idle` runs between polls.
  Bytes receive(int from, int tag, Clock::time_point deadline, const std::string& what,
                int* source = nullptr, const std::function<void()>& idle = {});
  // The sender of a message with `tag` that has arrived from `from` (or kAnySource), else -1.
  int probe(int from, int tag);
  static const int kAnySource;
  // Completes the sends that can be (frees their buffers); with a deadline, all of them.
  void progress();
  void flush(Clock::time_point deadline);

  // Ends every process of the job (MPI_Abort): for a failed node, so none is left waiting.
  [[noreturn]] void abort(int code);

  // Whether this process was started by mpirun (OpenMPI's or a PMIx launcher's environment), and
  // with how many processes (1 outside).
  static int launched_processes();

 private:
  void check(int rc, const std::string& what) const;
  struct Pending;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::deque<Pending*> pending_;
};

}  // namespace sandwich::engine::pipeline
