// Multi-rank configurations: R processes, one per rank, driven through shared memory, and
// re-formed when one of them dies.
//
// Who forks the ranks: a spawner process, forked once when the executor is made, forks them all,
// first and replacements. fork() in a multi-threaded process copies only the calling thread, so
// any lock another thread held at that moment (in the allocator, stdio, hwloc, our own code)
// stays locked forever in the child. The engine process is multi-threaded by the time a rank
// dies (HTTP threads, the engine thread, this executor's monitor); the spawner never starts a
// thread, so forking from it is always safe, and it holds the weights by copy-on-write from the
// moment it was forked, so replacements share them without reading the model again. (Re-exec
// would re-read or re-map the weights; forking the engine itself is the unsafe case above.)
//
// Death is seen without the dead rank's help: the engine holds a pidfd of every rank (readable
// once the rank has exited) and a monitor thread polls them. The spawner reaps a rank only when
// asked, after that, so a pid is never reused while the engine may still signal it. A step that
// a rank has not finished within the step timeout (a hung rank) and a step a rank reports as
// failed also re-form the group.
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <immintrin.h>

#include "kernels/allreduce.h"
#include "runtime/executor_impl.h"
#include "runtime/placed_weights.h"
#include "topotree/process_binding.h"

namespace sandwich::engine {
namespace {

struct EntryDesc {
  int32_t token_offset, n_tokens, start_pos, table_offset, n_blocks, want_logits, all_logits,
      hidden;
};

// Through syscall(): glibc 2.36's <sys/pidfd.h> lacks C++ linkage.
int pidfd_open(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* timeout = nullptr) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, timeout, nullptr, 0);
}

// The all-reduce and logits gather of ForwardPass, over the group's shared segment.
class ShmCollective : public Collective {
 public:
  ShmCollective(kernels::ShmAllReduce& ar, AllReduceAlgorithm algorithm)
      : ar_(ar), naive_(algorithm == AllReduceAlgorithm::Naive) {}
  void all_reduce_sum(float* data, size_t n) override {
    if (naive_)
      ar_.all_reduce_naive(data, n);
    else
      ar_.all_reduce(data, n);
  }
  // The logits buffer is shared: each rank writes its vocabulary columns, then all meet.
  void all_gather_columns(const float* local, int64_t rows, int64_t n_local, int64_t offset,
                          float* full, int64_t n_total) override {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(full + r * n_total + offset, local + r * n_local, n_local * sizeof(float));
    ar_.barrier();
  }
  float* reduce_buffer(size_t n) override {
    return n * sizeof(float) <= ar_.capacity_bytes() ? ar_.buffer<float>() : nullptr;
  }

 private:
  kernels::ShmAllReduce& ar_;
  bool naive_;  // the ablation's baseline (AllReduceAlgorithm::Naive)
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A rank's end as people read it: "was killed by SIGKILL (signal 9)", "exited with status 1".
std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by " + (name ? "SIG" + std::string(name) + " " : std::string()) +
           "(signal " + std::to_string(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, s.c_str());
}

// Re-formations allowed in a window before the group gives up.
constexpr int kMaxRestartsInWindow = 5;
constexpr auto kRestartWindow = std::chrono::seconds(60);
// How long fresh ranks get to start, and run() waits for a re-formation under way.
constexpr auto kStartTimeout = std::chrono::seconds(30);
// How long the spawner gets to answer.
constexpr int kSpawnerTimeoutMs = 10'000;
constexpr int kMaxRanks = 64;  // as the all-reduce allows

struct SpawnRequest {
  enum Op : int32_t { Spawn = 1, Reap = 2 } op;
  int32_t arg;  // Spawn: the rank; Reap: the pid
};
struct SpawnReply {
  int32_t pid;     // the rank forked or reaped, -1 on failure
  int32_t status;  // Reap: the wait status
  int32_t error;   // errno when pid is -1
};

}  // namespace

// The engine's end of the spawner's socket (SOCK_SEQPACKET: one message per request and reply).
struct RankGroupExecutor::Spawner {
  int sock = -1;
  ~Spawner() {
    if (sock >= 0) ::close(sock);
  }
  SpawnReply ask(SpawnRequest q) {
    if (sock < 0 || ::send(sock, &q, sizeof q, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof q))
      throw std::runtime_error("the rank spawner is gone");
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, kSpawnerTimeoutMs) != 1) {
      // A late answer would be taken for the next one's: end the spawner (it leaves when its
      // socket closes), which ends the group for good.
      ::close(sock);
      sock = -1;
      throw std::runtime_error("the rank spawner did not answer within " +
                               std::to_string(kSpawnerTimeoutMs / 1000) + " s");
    }
    SpawnReply a{};
    if (::recv(sock, &a, sizeof a, 0) != static_cast<ssize_t>(sizeof a))
      throw std::runtime_error("the rank spawner is gone");
    return a;
  }
};

struct RankControl {
  alignas(64) std::atomic<uint32_t> seq{0};   // steps published; ranks sleep on it
  alignas(64) std::atomic<uint32_t> done{0};  // ranks through the current step; the engine sleeps
  alignas(64) std::atomic<uint32_t> stop{0};
  alignas(64) std::atomic<uint32_t> failed{0};
  alignas(64) std::atomic<uint32_t> ready{0};                  // ranks started
  alignas(64) std::atomic<uint32_t> finished[kMaxRanks] = {};  // the last step each rank finished
  alignas(64) char message[512] = {};
  int32_t n_entries = 0;
  // A pipeline stage's residual stream in and out (StageIO), when the model is a stage's.
  int32_t stage_in = 0, stage_out = 0;
  size_t entries_off = 0, tokens_off = 0, tables_off = 0, logits_off = 0, hidden_off = 0;
  size_t stage_in_off = 0, stage_out_off = 0;
  EntryDesc* entries() {
    return reinterpret_cast<EntryDesc*>(reinterpret_cast<uint8_t*>(this) + entries_off);
  }
  int32_t* tokens() {
    return reinterpret_cast<int32_t*>(reinterpret_cast<uint8_t*>(this) + tokens_off);
  }
  int32_t* tables() {
    return reinterpret_cast<int32_t*>(reinterpret_cast<uint8_t*>(this) + tables_off);
  }
  float* logits() {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(this) + logits_off);
  }
  float* hidden() {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(this) + hidden_off);
  }
  float* stage_in_rows() {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(this) + stage_in_off);
  }
  float* stage_out_rows() {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(this) + stage_out_off);
  }
};

RankGroupExecutor::RankGroupExecutor(const Model& model, KVCache& kv,
                                     const topotree::ServiceConfig& config,
                                     const ExecutorLimits& limits)
    : model_(model), kv_(kv), config_(config), limits_(limits) {
  const ModelConfig& c = model.config;
  const int R = config.rank_count();
  // Before any rank is forked: a split that would cut quantized blocks is refused here.
  check_rank_count(model, R);
  if (limits_.max_blocks_per_seq <= 0)
    limits_.max_blocks_per_seq = static_cast<int32_t>(KVCache::blocks_for(c.max_seq_len));
  if (limits_.max_logit_rows <= 0) limits_.max_logit_rows = limits_.max_entries;
  if (limits_.max_hidden_rows <= 0) limits_.max_hidden_rows = limits_.max_entries;
  auto align = [](size_t v) { return (v + 63) / 64 * 64; };
  size_t off = align(sizeof(RankControl));
  const size_t entries_off = off;
  off = align(off + sizeof(EntryDesc) * limits_.max_entries);
  const size_t tokens_off = off;
  off = align(off + sizeof(int32_t) * limits_.max_tokens);
  const size_t tables_off = off;
  off = align(off + sizeof(int32_t) * static_cast<size_t>(limits_.max_entries) *
                        limits_.max_blocks_per_seq);
  const size_t logits_off = off;
  off = align(off + sizeof(float) * static_cast<size_t>(limits_.max_logit_rows) * c.vocab_size);
  const size_t hidden_off = off;
  off = align(off + sizeof(float) * static_cast<size_t>(limits_.max_hidden_rows) * c.dim);
  // A stage's residual stream, only where the model is a pipeline stage's.
  const size_t stage_rows_bytes =
      model.whole() ? 0 : sizeof(float) * static_cast<size_t>(limits_.max_tokens) * c.dim;
  const size_t stage_in_off = off;
  off = align(off + stage_rows_bytes);
  const size_t stage_out_off = off;
  off = align(off + stage_rows_bytes);
  control_region_ = SharedRegion("sandwich-step", off);
  ctl_ = new (control_region_.allocate(off)) RankControl;
  ctl_->entries_off = entries_off;
  ctl_->tokens_off = tokens_off;
  ctl_->tables_off = tables_off;
  ctl_->logits_off = logits_off;
  ctl_->hidden_off = hidden_off;
  ctl_->stage_in_off = stage_in_off;
  ctl_->stage_out_off = stage_out_off;
  const size_t reduce_bytes = static_cast<size_t>(limits_.max_tokens) * c.dim * sizeof(float);
  reduce_region_ =
      SharedRegion("sandwich-allreduce", kernels::ShmAllReduce::region_bytes(R, reduce_bytes));
  // Before the spawner is forked: the ranks inherit the placed weights.
  std::vector<int> nodes;
  for (const topotree::Rank& r : config.ranks) nodes.push_back(r.memory_node());
  rank_weights_ = model.placed_weights().place(model, nodes);

  int socks[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, socks) != 0)
    throw std::runtime_error("cannot start the rank spawner: " + std::string(std::strerror(errno)));
  spawner_ = std::make_unique<Spawner>();
  spawner_->sock = socks[0];
  const pid_t parent = getpid();
  spawner_pid_ = fork();
  if (spawner_pid_ < 0) {
    const int e = errno;
    ::close(socks[1]);
    throw std::runtime_error("cannot start the rank spawner: " + std::string(std::strerror(e)));
  }
  if (spawner_pid_ == 0) {
    // The spawner (and through it every rank) dies with the engine, whatever happens to it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    ::close(socks[0]);
    spawner_main(socks[1]);
  }
  ::close(socks[1]);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  try {
    if (wake_fd_ < 0) throw std::runtime_error("eventfd: " + std::string(std::strerror(errno)));
    spawn_group();
  } catch (...) {
    stop_group();
    throw;
  }
  monitor_ = std::thread([this] { monitor(); });
}

RankGroupExecutor::~RankGroupExecutor() {
  stopping_ = true;
  if (monitor_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
    monitor_.join();
  }
  stop_group();
}

std::vector<int> RankGroupExecutor::pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {pids_.begin(), pids_.end()};
}

std::string RankGroupExecutor::rank_name(int rank) const {
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(pids_[rank]) + ") of " +
         group_name();
}

std::string RankGroupExecutor::group_name() const {
  return "the " + (limits_.role.empty() ? "" : limits_.role + " ") + "rank group " +
         config_.to_string();
}

ExecutorHealth RankGroupExecutor::health() const {
  ExecutorHealth h;
  const State s = state_.load();
  h.restarting = s == State::Restarting;
  h.failed = s == State::Failed;
  h.message = why();
  h.restarts = restarts_.load();
  h.last_recovery_seconds = last_recovery_seconds_.load();
  return h;
}

std::string RankGroupExecutor::why() const {
  std::lock_guard<std::mutex> lock(why_mu_);
  return why_;
}

void RankGroupExecutor::set_why(const std::string& why) {
  std::lock_guard<std::mutex> lock(why_mu_);
  why_ = why;
}

// The spawner: a single-threaded loop that forks a rank or reaps one on request, and on the
// engine's end of the socket closing kills and reaps its ranks and leaves.
void RankGroupExecutor::spawner_main(int sock) {
  prctl(PR_SET_NAME, "sandwich-spawn");
  // Nothing inherited but the socket: a client connection or listening socket the engine had
  // open when it forked must not be held open by us or our ranks.
  const unsigned s = static_cast<unsigned>(sock);
  if (s > 3) ::close_range(3, s - 1, 0);
  ::close_range(s + 1, ~0u, 0);
  // The engine's handlers (which write to a pipe of its own) must not run here, and a Ctrl-C to
  // the process group must not end the ranks under a server that drains: the engine stops us.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  const pid_t self = getpid();
  std::vector<pid_t> children;
  auto receive = [&](SpawnRequest& q) {
    ssize_t n;
    while ((n = ::recv(sock, &q, sizeof q, 0)) < 0 && errno == EINTR) {
    }
    return n == static_cast<ssize_t>(sizeof q);
  };
  for (SpawnRequest q; receive(q);) {
    SpawnReply a{-1, 0, 0};
    if (q.op == SpawnRequest::Spawn) {
      a.pid = fork();
      if (a.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != self) _exit(1);
        ::close(sock);
        rank_main(q.arg);
      }
      if (a.pid > 0) children.push_back(a.pid);
    } else if (q.op == SpawnRequest::Reap) {
      a.pid = ::waitpid(q.arg, &a.status, 0);
      std::erase(children, q.arg);
    }
    if (a.pid < 0) a.error = errno;
    if (::send(sock, &a, sizeof a, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof a)) break;
  }
  for (pid_t p : children) ::kill(p, SIGKILL);
  for (pid_t p : children) ::waitpid(p, nullptr, 0);
  _exit(0);
}

void RankGroupExecutor::reset_shared_state() {
  ctl_->seq.store(0);
  ctl_->done.store(0);
  ctl_->stop.store(0);
  ctl_->failed.store(0);
  ctl_->ready.store(0);
  for (auto& f : ctl_->finished) f.store(0);
  ctl_->message[0] = '\0';
  // A rank killed inside an all-reduce leaves its flags half-way.
  std::memset(reduce_region_.data(), 0, reduce_region_.size());
}

// Forks the ranks and waits until all of them have started. Throws if one cannot be forked, dies
// or fails while starting, or does not start in time.
void RankGroupExecutor::spawn_group() {
  const int R = config_.rank_count();
  pids_.assign(R, -1);
  pidfds_.assign(R, -1);
  for (int r = 0; r < R; ++r) {
    const SpawnReply a = spawner_->ask({SpawnRequest::Spawn, r});
    if (a.pid < 0)
      throw std::runtime_error("cannot start rank " + std::to_string(r) + ": " +
                               std::strerror(a.error));
    pids_[r] = a.pid;
    // Race-free: the spawner does not reap the rank until asked, so the pid is still its.
    pidfds_[r] = pidfd_open(a.pid);
    if (pidfds_[r] < 0)
      throw std::runtime_error("pidfd_open of rank " + std::to_string(r) + ": " +
                               std::strerror(errno));
  }
  const auto deadline = Clock::now() + kStartTimeout;
  while (ctl_->ready.load(std::memory_order_acquire) < static_cast<uint32_t>(R)) {
    for (int r = 0; r < R; ++r) {
      pollfd p{pidfds_[r], POLLIN, 0};
      if (::poll(&p, 1, 0) == 1) {
        const std::string name = rank_name(r);
        const SpawnReply a = spawner_->ask({SpawnRequest::Reap, pids_[r]});
        ::close(pidfds_[r]);
        pidfds_[r] = -1;
        pids_[r] = -1;
        throw std::runtime_error(name + " " + describe_exit(a.status) + " while starting" +
                                 (ctl_->failed.load() ? std::string(": ") + ctl_->message : ""));
      }
    }
    if (Clock::now() > deadline)
      throw std::runtime_error("the ranks of " + group_name() + " did not start within " +
                               std::to_string(kStartTimeout.count()) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Kills the ranks that are left and reaps them (the spawner, if it is gone, took them along).
void RankGroupExecutor::kill_group() {
  for (size_t r = 0; r < pids_.size(); ++r)
    if (pids_[r] > 0) ::kill(pids_[r], SIGKILL);
  for (size_t r = 0; r < pids_.size(); ++r) {
    if (pids_[r] > 0) {
      try {
        spawner_->ask({SpawnRequest::Reap, pids_[r]});
      } catch (const std::exception&) {
      }
    }
    if (pidfds_[r] >= 0) ::close(pidfds_[r]);
    pids_[r] = -1;
    pidfds_[r] = -1;
  }
}

// Stops everything for good: asks the ranks to leave, insists, then ends the spawner.
void RankGroupExecutor::stop_group() {
  if (state_ == State::Serving && ctl_) {
    ctl_->stop.store(1, std::memory_order_release);
    ctl_->seq.fetch_add(1, std::memory_order_acq_rel);
    futex(&ctl_->seq, FUTEX_WAKE, INT32_MAX);
    // Ranks asleep between steps leave at once; give them a moment, then insist.
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    for (int fd : pidfds_) {
      pollfd p{fd, POLLIN, 0};
      while (fd >= 0 && Clock::now() < deadline && ::poll(&p, 1, 1) == 0) {
      }
    }
  }
  if (spawner_) kill_group();
  spawner_.reset();  // the spawner sees its socket close and leaves
  if (spawner_pid_ > 0) {
    // It has nothing left to wait for; should it be stuck anyway, do not wait with it.
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (::waitpid(spawner_pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(spawner_pid_, SIGKILL);
        ::waitpid(spawner_pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    spawner_pid_ = -1;
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

// Called by run() (holding mu_) when a step failed or hung: the group is marked restarting at
// once, so that no further step goes to it, and the monitor re-forms it.
bool RankGroupExecutor::request_restart(const std::string& why) {
  State expected = State::Serving;
  if (!state_.compare_exchange_strong(expected, State::Restarting)) return false;
  set_why(why);
  abort_step_ = true;
  restart_requested_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  return true;
}

void RankGroupExecutor::monitor() {
  const int R = config_.rank_count();
  const int spawner_fd = pidfd_open(spawner_pid_);
  std::vector<pollfd> fds;
  while (!stopping_) {
    fds.assign({{wake_fd_, POLLIN, 0}, {spawner_fd, POLLIN, 0}});
    for (int fd : pidfds_) fds.push_back({fd, POLLIN, 0});  // this thread alone changes them
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (stopping_) break;
    const auto detected = Clock::now();
    if (fds[0].revents) {
      uint64_t n;
      [[maybe_unused]] auto r = ::read(wake_fd_, &n, sizeof n);
    }
    if (spawner_fd < 0 || fds[1].revents) {
      // Its ranks died with it, and no other process can fork new ones safely.
      give_up("the rank spawner (pid " + std::to_string(spawner_pid_) + ") of " + group_name() +
              " is gone");
      break;
    }
    int dead = -1;
    for (int r = 0; r < R && dead < 0; ++r)
      if (fds[2 + r].revents) dead = r;
    std::string why;
    if (dead >= 0) {
      // No further step goes to the group (/health says so at once); the step under way, if any,
      // is stopped once we know how the rank ended, which the spawner tells without delay.
      why = rank_name(dead);
      set_why(why + " died");
      State expected = State::Serving;
      state_.compare_exchange_strong(expected, State::Restarting);
      try {
        const int status = spawner_->ask({SpawnRequest::Reap, pids_[dead]}).status;
        why.append(" ").append(describe_exit(status));
      } catch (const std::exception& e) {
        why.append(" died (").append(e.what()).append(")");
      }
      set_why(why);
      abort_step_ = true;
      futex(&ctl_->done, FUTEX_WAKE, INT32_MAX);
      std::lock_guard<std::mutex> lock(mu_);
      ::close(pidfds_[dead]);
      pidfds_[dead] = -1;
      pids_[dead] = -1;
    } else if (restart_requested_) {
      why = this->why();
    } else {
      continue;
    }
    recover(why, detected);
    if (state_ == State::Failed) break;
  }
  if (spawner_fd >= 0) ::close(spawner_fd);
}

// Re-forms the group: the other ranks are killed (they may be waiting in an all-reduce for the
// dead one), the shared step state is reset and R fresh ranks are forked by the spawner. A
// failure to start them counts as one more failure and is retried, up to the limit.
void RankGroupExecutor::recover(std::string why, Clock::time_point detected) {
  log_line(why + "; re-forming the group");
  std::unique_lock<std::mutex> lock(mu_);  // the step under way, if any, has been told to stop
  restart_requested_ = false;
  for (;;) {
    kill_group();
    const auto now = Clock::now();
    std::erase_if(recent_failures_, [&](auto t) { return now - t > kRestartWindow; });
    recent_failures_.push_back(now);
    if (static_cast<int>(recent_failures_.size()) > kMaxRestartsInWindow) {
      lock.unlock();
      give_up(group_name() + " failed " + std::to_string(recent_failures_.size()) +
              " times within " + std::to_string(kRestartWindow.count()) + " s (last: " + why + ")");
      return;
    }
    reset_shared_state();
    try {
      spawn_group();
      break;
    } catch (const std::exception& e) {
      why = std::string("re-forming the group failed: ") + e.what();
      log_line(why);
    }
  }
  const double took = seconds_since(detected);
  last_recovery_seconds_ = took;
  ++restarts_;
  abort_step_ = false;
  state_ = State::Serving;
  lock.unlock();
  cv_.notify_all();
  char buf[64];
  std::snprintf(buf, sizeof buf, " in %.3f s (restart %llu)", took,
                static_cast<unsigned long long>(restarts_.load()));
  log_line(group_name() + " is serving again: re-formed" + buf);
}

void RankGroupExecutor::give_up(const std::string& why) {
  set_why(why);
  state_ = State::Failed;
  abort_step_ = true;
  futex(&ctl_->done, FUTEX_WAKE, INT32_MAX);
  {
    std::lock_guard<std::mutex> lock(mu_);
    kill_group();
  }
  cv_.notify_all();
  log_line("cannot re-form the rank group: " + why);
}

void RankGroupExecutor::run(std::span<const BatchEntry> batch, float* logits, float* hidden) {
  run_stage(batch, StageIO{}, logits, hidden);
}

void RankGroupExecutor::run_stage(std::span<const BatchEntry> batch, const StageIO& io,
                                  float* logits, float* hidden) {
  if ((io.in || io.out) && model_.whole())
    throw std::logic_error("hidden states passed to a rank group of a whole model");
  const int R = config_.rank_count();
  const int32_t V = model_.config.vocab_size;
  if (static_cast<int32_t>(batch.size()) > limits_.max_entries)
    throw std::invalid_argument("batch of " + std::to_string(batch.size()) +
                                " sequences exceeds the executor's " +
                                std::to_string(limits_.max_entries));
  std::unique_lock<std::mutex> lock(mu_);
  // A rank that died since the last step fails no step: the monitor is about to re-form the
  // group, and a step that comes while it does waits for it rather than failing.
  std::vector<pollfd> ranks;
  for (int fd : pidfds_) ranks.push_back({fd, POLLIN, 0});
  if (::poll(ranks.data(), ranks.size(), 0) > 0) {
    State expected = State::Serving;
    state_.compare_exchange_strong(expected, State::Restarting);
  }
  cv_.wait_for(lock, kStartTimeout + std::chrono::seconds(kSpawnerTimeoutMs / 1000),
               [&] { return state_ != State::Restarting; });
  if (state_ != State::Serving)
    throw std::runtime_error(group_name() +
                             (state_ == State::Failed ? " is stopped: " : " is being re-formed: ") +
                             why());
  // Publish the step.
  int32_t tok = 0, tab = 0, n_logits = 0, n_hidden = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchEntry& e = batch[i];
    const int32_t n = static_cast<int32_t>(e.tokens.size()),
                  nb = static_cast<int32_t>(e.block_table.size());
    const int32_t rows = static_cast<int32_t>(e.logit_rows());
    const int32_t hidden_rows = static_cast<int32_t>(e.hidden_rows());
    if (tok + n > limits_.max_tokens || nb > limits_.max_blocks_per_seq ||
        n_logits + rows > limits_.max_logit_rows ||
        n_hidden + hidden_rows > limits_.max_hidden_rows)
      throw std::invalid_argument(
          "step larger than the executor's limits (" + std::to_string(limits_.max_tokens) +
          " tokens, " + std::to_string(limits_.max_blocks_per_seq) + " blocks per sequence, " +
          std::to_string(limits_.max_logit_rows) + " rows of logits, " +
          std::to_string(limits_.max_hidden_rows) + " of hidden states)");
    std::memcpy(ctl_->tokens() + tok, e.tokens.data(), n * sizeof(int32_t));
    std::memcpy(ctl_->tables() + tab, e.block_table.data(), nb * sizeof(int32_t));
    ctl_->entries()[i] = {tok,
                          n,
                          e.start_pos,
                          tab,
                          nb,
                          e.want_logits ? 1 : 0,
                          e.all_logits ? 1 : 0,
                          static_cast<int32_t>(e.hidden)};
    tok += n;
    tab += nb;
    n_logits += rows;
    n_hidden += hidden_rows;
  }
  ctl_->n_entries = static_cast<int32_t>(batch.size());
  ctl_->stage_in = io.in ? 1 : 0;
  ctl_->stage_out = io.out ? 1 : 0;
  if (io.in)
    std::memcpy(ctl_->stage_in_rows(), io.in, static_cast<size_t>(tok) * model_.config.dim * 4);
  ctl_->done.store(0, std::memory_order_relaxed);
  const uint32_t step = ctl_->seq.fetch_add(1, std::memory_order_acq_rel) + 1;
  futex(&ctl_->seq, FUTEX_WAKE, INT32_MAX);

  // Wait: spin briefly (short decode steps), then sleep in 10 ms slices. The monitor wakes us
  // when a rank dies; a rank that neither finishes nor dies is caught by the step timeout.
  const auto t0 = Clock::now();
  const auto timeout = std::chrono::duration<double>(limits_.step_timeout_seconds);
  for (uint32_t d; (d = ctl_->done.load(std::memory_order_acquire)) < static_cast<uint32_t>(R);) {
    if (abort_step_) throw std::runtime_error(why() + "; the step failed");
    if (ctl_->failed.load(std::memory_order_acquire)) break;
    const auto waited = Clock::now() - t0;
    if (waited < std::chrono::microseconds(200)) {
      _mm_pause();
      continue;
    }
    if (waited > timeout) {
      std::string late;
      for (int r = 0; r < R; ++r)
        if (ctl_->finished[r].load() != step) late += (late.empty() ? "" : ", ") + rank_name(r);
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g s", limits_.step_timeout_seconds);
      // A rank waiting in an all-reduce for a hung one is late too.
      const std::string why = late + " did not finish a step within " + limit;
      request_restart(why);
      throw std::runtime_error(why + "; the step failed");
    }
    const timespec slice{0, 10'000'000};
    futex(&ctl_->done, FUTEX_WAIT, d, &slice);
  }
  if (ctl_->failed.load(std::memory_order_acquire)) {
    const std::string why = std::string("rank step failed: ") + ctl_->message;
    request_restart(why);
    throw std::runtime_error(why);
  }
  if (io.out)
    std::memcpy(io.out, ctl_->stage_out_rows(), static_cast<size_t>(tok) * model_.config.dim * 4);
  if (!model_.has_head()) return;
  if (n_logits > 0)
    std::memcpy(logits, ctl_->logits(), static_cast<size_t>(n_logits) * V * sizeof(float));
  if (n_hidden > 0)
    std::memcpy(hidden, ctl_->hidden(),
                static_cast<size_t>(n_hidden) * model_.config.dim * sizeof(float));
}

void RankGroupExecutor::rank_main(int rank) {
  int code = 0;
  char name[16];
  std::snprintf(name, sizeof name, "sandwich-rank%d", rank);
  prctl(PR_SET_NAME, name);
  try {
    const topotree::Rank& p = config_.ranks[rank];
    topotree::bind_process(p);
    const int R = config_.rank_count();
    kernels::ThreadTeam team(static_cast<int>(p.cpus.size()), p.cpus);
    kernels::ShmAllReduce ar(
        reduce_region_.data(), R, rank,
        static_cast<size_t>(limits_.max_tokens) * model_.config.dim * sizeof(float));
    ShmCollective coll(ar, limits_.ablation.allreduce);
    ForwardPass fp(model_, kv_, team, RankView{rank, R}, &coll, gemm_modes(limits_),
                   rank_weights_[rank]);
    std::vector<BatchEntry> batch;
    ctl_->ready.fetch_add(1, std::memory_order_acq_rel);
    // Steps count from 1; the first may be published before this process gets here.
    uint32_t seen = 0;
    for (;;) {
      for (uint32_t s; (s = ctl_->seq.load(std::memory_order_acquire)) == seen;)
        futex(&ctl_->seq, FUTEX_WAIT, s);
      ++seen;  // the engine publishes one step at a time and waits for it
      if (ctl_->stop.load(std::memory_order_acquire)) break;
      batch.clear();
      for (int32_t i = 0; i < ctl_->n_entries; ++i) {
        const EntryDesc& d = ctl_->entries()[i];
        batch.push_back(
            {std::span<const int32_t>(ctl_->tokens() + d.token_offset, d.n_tokens), d.start_pos,
             std::span<const int32_t>(ctl_->tables() + d.table_offset, d.n_blocks),
             d.want_logits != 0, d.all_logits != 0, static_cast<HiddenOutput>(d.hidden)});
      }
      try {
        // The hidden states are the same on every rank after the last all-reduce: rank 0 writes.
        const StageIO io{ctl_->stage_in ? ctl_->stage_in_rows() : nullptr,
                         ctl_->stage_out && rank == 0 ? ctl_->stage_out_rows() : nullptr};
        fp.run(batch, io, ctl_->logits(), rank == 0 ? ctl_->hidden() : nullptr);
      } catch (const std::exception& e) {
        std::snprintf(ctl_->message, sizeof ctl_->message, "rank %d: %s", rank, e.what());
        ctl_->failed.store(1, std::memory_order_release);
      }
      ctl_->finished[rank].store(seen, std::memory_order_release);
      if (ctl_->done.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(R))
        futex(&ctl_->done, FUTEX_WAKE, 1);
      else if (ctl_->failed.load(std::memory_order_acquire))
        futex(&ctl_->done, FUTEX_WAKE, 1);
    }
  } catch (const std::exception& e) {
    std::snprintf(ctl_->message, sizeof ctl_->message, "rank %d could not start: %s", rank,
                  e.what());
    ctl_->failed.store(1, std::memory_order_release);
    futex(&ctl_->done, FUTEX_WAKE, 1);
    code = 1;
  }
  // No destructors of the engine's objects run here: they belong to the parent.
  _exit(code);
}

void check_rank_count(const Model& model, int ranks) {
  if (ranks > kMaxRanks)
    throw std::invalid_argument(std::to_string(ranks) + " ranks: at most " +
                                std::to_string(kMaxRanks) + " are supported");
  check_tensor_parallel(model, ranks);  // KV heads, and quantized blocks a shard would cut
}

bool rank_count_fits(const Model& model, int ranks) {
  try {
    check_rank_count(model, ranks);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace sandwich::engine
