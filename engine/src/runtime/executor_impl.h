#pragma once
// The executors behind make_executor (private to engine/).
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/runtime/shared_region.h"
#include "kernels/thread_team.h"
#include "runtime/forward.h"

namespace sandwich::engine {

// The forward pass's GEMM flags that the limits ask for.
GemmModes gemm_modes(const ExecutorLimits& limits);

class LocalExecutor : public Executor {
 public:
  LocalExecutor(const Model& model, KVCache& kv, const topotree::ServiceConfig& config,
                GemmModes gemm);
  using Executor::run;
  void run(std::span<const BatchEntry> batch, float* logits, float* hidden) override;
  void run_stage(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                 float* hidden) override;
  const topotree::ServiceConfig& config() const override { return config_; }

 private:
  topotree::ServiceConfig config_;
  kernels::ThreadTeam team_;
  ForwardPass fp_;
};

struct RankControl;

// R rank processes forked by a spawner process, re-formed when one dies (executor_ranks.cpp).
class RankGroupExecutor : public Executor {
 public:
  RankGroupExecutor(const Model& model, KVCache& kv, const topotree::ServiceConfig& config,
                    const ExecutorLimits& limits);
  ~RankGroupExecutor() override;
  using Executor::run;
  void run(std::span<const BatchEntry> batch, float* logits, float* hidden) override;
  void run_stage(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                 float* hidden) override;
  const topotree::ServiceConfig& config() const override { return config_; }
  ExecutorHealth health() const override;
  std::vector<int> pids() const;
  int spawner_pid() const { return spawner_pid_; }

 private:
  enum class State { Serving, Restarting, Failed };
  struct Spawner;

  [[noreturn]] void spawner_main(int sock);
  [[noreturn]] void rank_main(int rank);
  void spawn_group();
  void kill_group();
  void stop_group();
  void reset_shared_state();
  void monitor();
  void recover(std::string why, std::chrono::steady_clock::time_point detected);
  void give_up(const std::string& why);
  bool request_restart(const std::string& why);
  std::string why() const;
  void set_why(const std::string& why);
  std::string rank_name(int rank) const;
  std::string group_name() const;

  const Model& model_;
  KVCache& kv_;
  topotree::ServiceConfig config_;
  ExecutorLimits limits_;
  std::vector<const ModelWeights*> rank_weights_;  // on each rank's NUMA node (placed_weights.h)
  SharedRegion control_region_, reduce_region_;
  RankControl* ctl_ = nullptr;
  std::unique_ptr<Spawner> spawner_;
  pid_t spawner_pid_ = -1;
  // The current ranks and their pidfds (-1 once gone); the monitor and the constructor and
  // destructor change them, under mu_.
  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;
  int wake_fd_ = -1;  // eventfd: the monitor is wanted (restart requested, or stopping)
  std::thread monitor_;
  // run() holds mu_ for a step, the monitor while it re-forms the group.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<State> state_{State::Serving};
  std::atomic<bool> abort_step_{false}, restart_requested_{false}, stopping_{false};
  std::atomic<uint64_t> restarts_{0};
  std::atomic<double> last_recovery_seconds_{0};
  std::vector<std::chrono::steady_clock::time_point> recent_failures_;  // monitor only
  mutable std::mutex why_mu_;
  std::string why_;
};

}  // namespace sandwich::engine
