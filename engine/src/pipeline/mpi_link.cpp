// MPI for the pipeline: non-blocking sends, receives polled against a deadline (MPI_Iprobe): a
// blocking MPI wait would spin a core for as long as a node is idle.
#include "pipeline/mpi_link.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <thread>

namespace sandwich::engine::pipeline {

struct MpiLink::Pending {
  Bytes bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

namespace {

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(len));
}

}  // namespace

int MpiLink::launched_processes() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v && *v) return std::max(1, std::atoi(v));
  return 1;
}

MpiLink::MpiLink() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // OpenMPI's TCP transport sends a message past its eager limit (64 KiB) only as the sender
    // calls MPI again: a node computing its next micro-batch would hold the last one back for a
    // whole stage. Eager messages of up to 32 MiB go at once (a user's setting wins).
    ::setenv("OMPI_MCA_btl_tcp_eager_limit", "33554432", 0);
    ::setenv("OMPI_MCA_btl_tcp_max_send_size", "33554432", 0);
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw std::runtime_error("MPI could not start (MPI_Init_thread failed)");
    // The engine thread calls MPI, the main thread starts and ends it: never both at once.
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error("this MPI library does not allow calls from several threads");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  std::vector<char> all(static_cast<size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  check(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                      MPI_CHAR, MPI_COMM_WORLD),
        "exchanging host names");
  for (int r = 0; r < size_; ++r)
    hosts_.emplace_back(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
}

MpiLink::~MpiLink() {
  for (Pending* p : pending_) {
    if (p->request != MPI_REQUEST_NULL) MPI_Cancel(&p->request);
    delete p;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiLink::name(int node) const {
  return "node " + std::to_string(node) +
         (node >= 0 && node < static_cast<int>(hosts_.size()) ? " (" + hosts_[node] + ")" : "");
}

void MpiLink::check(int rc, const std::string& what) const {
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI: " + what + ": " + mpi_error(rc));
}

void MpiLink::send(int to, int tag, Bytes bytes) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw std::runtime_error("a pipeline message of " + std::to_string(bytes.size()) +
                             " bytes is larger than MPI's count allows");
  auto* p = new Pending{std::move(bytes)};
  const int rc = MPI_Isend(p->bytes.data(), static_cast<int>(p->bytes.size()), MPI_BYTE, to, tag,
                           MPI_COMM_WORLD, &p->request);
  if (rc != MPI_SUCCESS) {
    delete p;
    check(rc, "sending to " + name(to));
  }
  pending_.push_back(p);
  progress();
}

void MpiLink::progress() {
  while (!pending_.empty()) {
    Pending* p = pending_.front();
    int done = 0;
    check(MPI_Test(&p->request, &done, MPI_STATUS_IGNORE), "sending");
    if (!done) break;
    pending_.pop_front();
    delete p;
  }
}

namespace {

// Polls `ready` until true or the deadline: yields the CPU between polls for a while (a node
// waits for the next micro-batch about one stage's time, and its cores are idle meanwhile), then
// sleeps in slices growing to 0.5 ms, so an idle node costs nothing and the first step after a
// pause waits at most that much longer.
template <class Ready>
bool wait_until(Ready ready, Clock::time_point deadline) {
  const auto start = Clock::now();
  auto slice = std::chrono::microseconds(20);
  for (;;) {
    if (ready()) return true;
    const auto now = Clock::now();
    if (now > deadline) return false;
    if (now - start < std::chrono::milliseconds(20)) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(slice);
    slice = std::min(slice * 2, std::chrono::microseconds(500));
  }
}

}  // namespace

const int MpiLink::kAnySource = MPI_ANY_SOURCE;

int MpiLink::probe(int from, int tag) {
  int flag = 0;
  MPI_Status status{};
  check(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &status),
        "waiting for " + (from == MPI_ANY_SOURCE ? std::string("the nodes") : name(from)));
  return flag ? status.MPI_SOURCE : -1;
}

Bytes MpiLink::receive(int from, int tag, Clock::time_point deadline, const std::string& what,
                       int* source, const std::function<void()>& idle) {
  MPI_Status status{};
  const std::string who = from == MPI_ANY_SOURCE ? std::string("the nodes") : name(from);
  const bool ok = wait_until(
      [&] {
        progress();
        if (idle) idle();
        int flag = 0;
        check(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &status), "waiting for " + who);
        return flag != 0;
      },
      deadline);
  if (!ok) throw NodeTimeout(who + " did not answer " + what);
  int count = 0;
  const int src = status.MPI_SOURCE;
  if (source) *source = src;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "receiving from " + name(src));
  Bytes bytes(static_cast<size_t>(count));
  check(MPI_Recv(bytes.data(), count, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "receiving from " + name(src));
  return bytes;
}

void MpiLink::flush(Clock::time_point deadline) {
  if (!wait_until(
          [&] {
            progress();
            return pending_.empty();
          },
          deadline))
    throw NodeTimeout("a message to the next node was not taken in time");
}

void MpiLink::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace sandwich::engine::pipeline
