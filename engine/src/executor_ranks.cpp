// Multi-rank configurations: R forked processes, one per rank, driven through shared memory.
#include <linux/futex.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <immintrin.h>

#include "executor_impl.h"
#include "kernels/allreduce.h"
#include "topotree/process_binding.h"

namespace sandwich {
namespace {

struct EntryDesc {
  int32_t token_offset, n_tokens, start_pos, table_offset, n_blocks, want_logits;
};

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* timeout = nullptr) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, timeout, nullptr, 0);
}

// The all-reduce and logits gather of ForwardPass, over the group's shared segment.
class ShmCollective : public Collective {
 public:
  explicit ShmCollective(kernels::ShmAllReduce& ar) : ar_(ar) {}
  void all_reduce_sum(float* data, size_t n) override { ar_.all_reduce(data, n); }
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
};

}  // namespace

struct RankControl {
  alignas(64) std::atomic<uint32_t> seq{0};  // steps published; ranks sleep on it
  alignas(64) std::atomic<uint32_t> done{
      0};  // ranks through the current step; the engine sleeps on it
  alignas(64) std::atomic<uint32_t> stop{0};
  alignas(64) std::atomic<uint32_t> failed{0};
  alignas(64) char message[512] = {};
  int32_t n_entries = 0;
  size_t entries_off = 0, tokens_off = 0, tables_off = 0, logits_off = 0;
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
};

RankGroupExecutor::RankGroupExecutor(const Model& model, KVCache& kv,
                                     const topo::ServiceConfig& config,
                                     const ExecutorLimits& limits)
    : model_(model), kv_(kv), config_(config), limits_(limits) {
  const ModelConfig& c = model.config;
  const int R = config.rank_count();
  if (c.n_kv_heads % R != 0)
    throw std::invalid_argument(std::to_string(R) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  if (limits_.max_blocks_per_seq <= 0)
    limits_.max_blocks_per_seq = static_cast<int32_t>(KVCache::blocks_for(c.max_seq_len));
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
  off = align(off + sizeof(float) * static_cast<size_t>(limits_.max_entries) * c.vocab_size);
  control_region_ = SharedRegion("sandwich-step", off);
  ctl_ = new (control_region_.allocate(off)) RankControl;
  ctl_->entries_off = entries_off;
  ctl_->tokens_off = tokens_off;
  ctl_->tables_off = tables_off;
  ctl_->logits_off = logits_off;
  const size_t reduce_bytes = static_cast<size_t>(limits_.max_tokens) * c.dim * sizeof(float);
  reduce_region_ =
      SharedRegion("sandwich-allreduce", kernels::ShmAllReduce::region_bytes(R, reduce_bytes));

  const pid_t parent = getpid();
  for (int r = 0; r < R; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      const int e = errno;
      stop_all(true);
      throw std::runtime_error("cannot start rank " + std::to_string(r) + ": " + std::strerror(e));
    }
    if (pid == 0) {
      // The rank dies with the engine, whatever happens to it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      rank_main(r);
    }
    pids_.push_back(pid);
  }
}

RankGroupExecutor::~RankGroupExecutor() {
  stop_all(false);
}

std::vector<int> RankGroupExecutor::pids() const {
  return {pids_.begin(), pids_.end()};
}

void RankGroupExecutor::stop_all(bool kill_now) {
  if (pids_.empty()) return;
  if (!kill_now) {
    ctl_->stop.store(1, std::memory_order_release);
    ctl_->seq.fetch_add(1, std::memory_order_acq_rel);
    futex(&ctl_->seq, FUTEX_WAKE, INT32_MAX);
    // Ranks asleep between steps leave at once; give them a moment, then insist.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    for (pid_t& p : pids_) {
      while (p > 0 && std::chrono::steady_clock::now() < deadline) {
        if (waitpid(p, nullptr, WNOHANG) == p)
          p = 0;
        else
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGKILL);
  for (pid_t p : pids_)
    if (p > 0) waitpid(p, nullptr, 0);
  pids_.clear();
}

void RankGroupExecutor::fail(const std::string& why) {
  stop_all(true);
  broken_ = true;
  broken_reason_ = why;
  throw std::runtime_error(why);
}

void RankGroupExecutor::run(std::span<const BatchEntry> batch, float* logits) {
  if (broken_)
    throw std::runtime_error("the " + config_.to_string() +
                             " rank group is stopped: " + broken_reason_);
  const int R = config_.rank_count();
  const int32_t V = model_.config.vocab_size;
  if (static_cast<int32_t>(batch.size()) > limits_.max_entries)
    throw std::invalid_argument("batch of " + std::to_string(batch.size()) +
                                " sequences exceeds the executor's " +
                                std::to_string(limits_.max_entries));
  // Publish the step.
  int32_t tok = 0, tab = 0, n_logits = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchEntry& e = batch[i];
    const int32_t n = static_cast<int32_t>(e.tokens.size()),
                  nb = static_cast<int32_t>(e.block_table.size());
    if (tok + n > limits_.max_tokens || nb > limits_.max_blocks_per_seq)
      throw std::invalid_argument(
          "step larger than the executor's limits (" + std::to_string(limits_.max_tokens) +
          " tokens, " + std::to_string(limits_.max_blocks_per_seq) + " blocks per sequence)");
    std::memcpy(ctl_->tokens() + tok, e.tokens.data(), n * sizeof(int32_t));
    std::memcpy(ctl_->tables() + tab, e.block_table.data(), nb * sizeof(int32_t));
    ctl_->entries()[i] = {tok, n, e.start_pos, tab, nb, e.want_logits ? 1 : 0};
    tok += n;
    tab += nb;
    n_logits += e.want_logits ? 1 : 0;
  }
  ctl_->n_entries = static_cast<int32_t>(batch.size());
  ctl_->done.store(0, std::memory_order_relaxed);
  ctl_->seq.fetch_add(1, std::memory_order_acq_rel);
  futex(&ctl_->seq, FUTEX_WAKE, INT32_MAX);

  // Wait: spin briefly (short decode steps), then sleep in 10 ms slices checking on the ranks.
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t d; (d = ctl_->done.load(std::memory_order_acquire)) < static_cast<uint32_t>(R);) {
    if (ctl_->failed.load(std::memory_order_acquire))
      fail(std::string("rank step failed: ") + ctl_->message + "; the rank group was stopped");
    if (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(200)) {
      _mm_pause();
      continue;
    }
    const timespec slice{0, 10'000'000};
    futex(&ctl_->done, FUTEX_WAIT, d, &slice);
    for (size_t r = 0; r < pids_.size(); ++r) {
      int st = 0;
      if (waitpid(pids_[r], &st, WNOHANG) == pids_[r]) {
        pids_[r] = -1;
        const std::string how = WIFSIGNALED(st)
                                    ? "was killed by signal " + std::to_string(WTERMSIG(st))
                                    : "exited with status " + std::to_string(WEXITSTATUS(st));
        fail("rank " + std::to_string(r) + " of " + config_.to_string() + " " + how +
             "; the step failed and the other ranks were stopped");
      }
    }
  }
  if (ctl_->failed.load(std::memory_order_acquire))
    fail(std::string("rank step failed: ") + ctl_->message + "; the rank group was stopped");
  if (n_logits > 0)
    std::memcpy(logits, ctl_->logits(), static_cast<size_t>(n_logits) * V * sizeof(float));
}

void RankGroupExecutor::rank_main(int rank) {
  int code = 0;
  try {
    const topo::Rank& p = config_.ranks[rank];
    topo::bind_process(p);
    const int R = config_.rank_count();
    kernels::ThreadTeam team(static_cast<int>(p.cpus.size()), p.cpus);
    kernels::ShmAllReduce ar(
        reduce_region_.data(), R, rank,
        static_cast<size_t>(limits_.max_tokens) * model_.config.dim * sizeof(float));
    ShmCollective coll(ar);
    ForwardPass fp(model_, kv_, team, RankView{rank, R}, &coll, limits_.batch_invariant);
    std::vector<BatchEntry> batch;
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
        batch.push_back({std::span<const int32_t>(ctl_->tokens() + d.token_offset, d.n_tokens),
                         d.start_pos,
                         std::span<const int32_t>(ctl_->tables() + d.table_offset, d.n_blocks),
                         d.want_logits != 0});
      }
      try {
        fp.run(batch, ctl_->logits());
      } catch (const std::exception& e) {
        std::snprintf(ctl_->message, sizeof ctl_->message, "rank %d: %s", rank, e.what());
        ctl_->failed.store(1, std::memory_order_release);
      }
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

}  // namespace sandwich
