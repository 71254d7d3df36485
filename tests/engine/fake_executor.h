#pragma once
// A stand-in for the executors of a Scheduler, for its tests: no compute. It records every step
// and keeps the tokens it is fed in a mirror of the KV cache (one token per slot), so an entry's
// whole context can be read back through its block table as attention would read it. The logits
// it writes make the next token of a script (a function of that context) the argmax, so greedy
// output depends on every cached position: a wrong block table or start position shows up as
// different output. Steps can be held (the engine thread parks in run() until released), failed
// or slowed down.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/runtime/scheduler.h"

namespace sandwich::test {

struct FakeEntry {
  std::vector<int32_t> tokens;  // the new tokens
  int32_t start_pos = 0;
  std::vector<int32_t> block_table;
  bool want_logits = false;
  std::vector<int32_t> context;  // positions [0, start_pos + tokens.size()) read back
};

struct FakeStep {
  std::string phase;  // which executor ran it: "prefill" (made first) or "decode"
  std::vector<FakeEntry> entries;
  int32_t kv_used_blocks = 0;  // when the step ran

  int32_t tokens() const {
    int32_t n = 0;
    for (auto& e : entries) n += static_cast<int32_t>(e.tokens.size());
    return n;
  }
};

class FakeBackend {
 public:
  using Script = std::function<int32_t(std::span<const int32_t> context)>;

  explicit FakeBackend(int32_t vocab_size) : vocab_(vocab_size) {}

  // For SchedulerOptions::executor_factory. The first executor made is "prefill", the next
  // "decode" (the scheduler makes a second one only when the phases' configurations differ).
  engine::ExecutorFactory factory();

  // The next token after a context (default: a hash of it, among ordinary tokens, never a
  // stop token of a Llama-2 vocabulary).
  void set_script(Script s) {
    std::lock_guard<std::mutex> lock(mu_);
    script_ = std::move(s);
  }
  // The step with this index (0 = the first step) parks in run() until released.
  void hold_at(size_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = step;
  }
  // Waits until the engine thread is parked in step `step`; false after 10 s.
  bool wait_held(size_t step) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return parked_at_ == step; });
  }
  // Lets the parked step go on; with then_hold, the step of that index parks next (set at once,
  // so the engine cannot slip past it).
  void release(std::optional<size_t> then_hold = std::nullopt) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = then_hold;
    cv_.notify_all();
  }
  // The first step from now on that `when` accepts throws std::runtime_error (once).
  void fail_once(std::function<bool(const FakeStep&)> when) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = std::move(when);
  }
  void set_delay(std::chrono::microseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    delay_ = d;
  }

  std::vector<FakeStep> steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  // Broken promises of the executor contract (block tables, limits, vocabulary); none expected.
  std::vector<std::string> violations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return violations_;
  }
  int executors_made() const {
    std::lock_guard<std::mutex> lock(mu_);
    return made_;
  }

  // The default script: any function of the whole context does; this one spreads over the
  // ordinary pieces of a llama2.c vocabulary (ids from 259 on; 0-2 are special, 3-258 bytes).
  static int32_t hash_next(std::span<const int32_t> context, int32_t vocab) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : context) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    const int32_t first = vocab > 300 ? 259 : 3;
    return first + static_cast<int32_t>(h % static_cast<uint64_t>(vocab - first));
  }

 private:
  class Exec;
  void run(const std::string& phase, const engine::ExecutorLimits& limits, engine::KVCache& kv,
           std::span<const engine::BatchEntry> batch, float* logits);
  void violation(const std::string& what) {
    violations_.push_back(what);
    throw std::invalid_argument(what);
  }

  int32_t vocab_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Script script_;
  std::optional<size_t> hold_;
  std::optional<size_t> parked_at_;
  std::function<bool(const FakeStep&)> fail_;
  std::chrono::microseconds delay_{0};
  std::vector<FakeStep> steps_;
  std::vector<std::string> violations_;
  std::vector<int32_t> slots_;  // the KV mirror: a token per (block, offset); -1 never written
  int made_ = 0;
};

class FakeBackend::Exec : public engine::Executor {
 public:
  Exec(FakeBackend& b, std::string phase, engine::KVCache& kv,
       const topotree::ServiceConfig& config, const engine::ExecutorLimits& limits)
      : b_(b), phase_(std::move(phase)), kv_(kv), config_(config), limits_(limits) {}
  using engine::Executor::run;
  // Hidden states (embeddings) are not faked: their tests run the real forward pass.
  void run(std::span<const engine::BatchEntry> batch, float* logits, float*) override {
    b_.run(phase_, limits_, kv_, batch, logits);
  }
  const topotree::ServiceConfig& config() const override { return config_; }

 private:
  FakeBackend& b_;
  std::string phase_;
  engine::KVCache& kv_;
  topotree::ServiceConfig config_;
  engine::ExecutorLimits limits_;
};

inline engine::ExecutorFactory FakeBackend::factory() {
  return [this](const engine::Model&, engine::KVCache& kv, const topotree::ServiceConfig& config,
                const engine::ExecutorLimits& limits) -> std::unique_ptr<engine::Executor> {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.assign(static_cast<size_t>(kv.num_blocks()) * engine::KVCache::kBlockTokens, -1);
    const char* phase = made_++ == 0 ? "prefill" : "decode";
    return std::make_unique<Exec>(*this, phase, kv, config, limits);
  };
}

inline void FakeBackend::run(const std::string& phase, const engine::ExecutorLimits& limits,
                             engine::KVCache& kv, std::span<const engine::BatchEntry> batch,
                             float* logits) {
  std::unique_lock<std::mutex> lock(mu_);
  const size_t index = steps_.size();
  FakeStep step;
  step.phase = phase;
  step.kv_used_blocks = kv.used_blocks();  // the engine thread is the one in here: no race
  const int32_t B = engine::KVCache::kBlockTokens;
  if (static_cast<int32_t>(batch.size()) > limits.max_entries)
    violation("step " + std::to_string(index) + " has more entries than max_entries");
  // Entries may share blocks they only read (a cached prefix), never one that any of them writes.
  std::vector<int32_t> written, read_only;
  for (const engine::BatchEntry& e : batch) {
    FakeEntry f;
    f.tokens.assign(e.tokens.begin(), e.tokens.end());
    f.start_pos = e.start_pos;
    f.block_table.assign(e.block_table.begin(), e.block_table.end());
    f.want_logits = e.want_logits;
    const int64_t end = e.start_pos + static_cast<int64_t>(e.tokens.size());
    if (e.tokens.empty() || e.start_pos < 0)
      violation("step " + std::to_string(index) + ": an empty chunk or a negative position");
    if (static_cast<int64_t>(e.block_table.size()) * B < end)
      violation("step " + std::to_string(index) + ": the block table does not cover the chunk");
    auto in = [](const std::vector<int32_t>& v, int32_t b) {
      return std::find(v.begin(), v.end(), b) != v.end();
    };
    for (size_t i = 0; i < e.block_table.size(); ++i) {
      const int32_t blk = e.block_table[i];
      if (blk < 0 || blk >= kv.num_blocks())
        violation("step " + std::to_string(index) + ": block " + std::to_string(blk));
      const bool writes = static_cast<int64_t>(i + 1) * B > e.start_pos;
      if (in(written, blk) || (writes && in(read_only, blk)))
        violation("step " + std::to_string(index) + ": two entries share block " +
                  std::to_string(blk) + ", written by one");
      (writes ? written : read_only).push_back(blk);
    }
    for (int32_t t : e.tokens)
      if (t < 0 || t >= vocab_) violation("step " + std::to_string(index) + ": token outside");
    auto slot = [&](int64_t pos) -> int32_t& {
      return slots_[static_cast<size_t>(e.block_table[pos / B]) * B + pos % B];
    };
    for (size_t i = 0; i < e.tokens.size(); ++i) slot(e.start_pos + i) = e.tokens[i];
    for (int64_t pos = 0; pos < end; ++pos) f.context.push_back(slot(pos));
    step.entries.push_back(std::move(f));
  }
  if (step.tokens() > limits.max_tokens)
    violation("step " + std::to_string(index) + " has more tokens than max_tokens");
  steps_.push_back(step);
  if (hold_ == index) {
    parked_at_ = index;
    cv_.notify_all();
    cv_.wait(lock, [&] { return hold_ != index; });
    parked_at_.reset();
  }
  if (delay_.count() > 0) {
    const auto d = delay_;
    lock.unlock();
    std::this_thread::sleep_for(d);  // a slow step, not synchronisation
    lock.lock();
  }
  if (fail_ && fail_(step)) {
    fail_ = nullptr;
    throw std::runtime_error("injected failure at step " + std::to_string(index));
  }
  size_t row = 0;
  for (const FakeEntry& f : step.entries) {
    if (!f.want_logits) continue;
    float* r = logits + row++ * static_cast<size_t>(vocab_);
    std::fill(r, r + vocab_, 0.0f);
    const int32_t next = script_ ? script_(f.context) : hash_next(f.context, vocab_);
    r[next] = 10.0f;
  }
}

}  // namespace sandwich::test
