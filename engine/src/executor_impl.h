#pragma once
// The executors behind make_executor (private to engine/).
#include <sys/types.h>

#include <memory>
#include <vector>

#include "engine/executor.h"
#include "engine/shared_region.h"
#include "forward.h"
#include "kernels/thread_team.h"

namespace sandwich {

class LocalExecutor : public Executor {
 public:
  LocalExecutor(const Model& model, KVCache& kv, const topo::ServiceConfig& config,
                bool batch_invariant);
  void run(std::span<const BatchEntry> batch, float* logits) override;
  const topo::ServiceConfig& config() const override { return config_; }

 private:
  topo::ServiceConfig config_;
  kernels::ThreadTeam team_;
  ForwardPass fp_;
};

struct RankControl;

class RankGroupExecutor : public Executor {
 public:
  RankGroupExecutor(const Model& model, KVCache& kv, const topo::ServiceConfig& config,
                    const ExecutorLimits& limits);
  ~RankGroupExecutor() override;
  void run(std::span<const BatchEntry> batch, float* logits) override;
  const topo::ServiceConfig& config() const override { return config_; }
  std::vector<int> pids() const;

 private:
  [[noreturn]] void fail(const std::string& why);
  void stop_all(bool kill_now);
  [[noreturn]] void rank_main(int rank);

  const Model& model_;
  KVCache& kv_;
  topo::ServiceConfig config_;
  ExecutorLimits limits_;
  SharedRegion control_region_, reduce_region_;
  RankControl* ctl_ = nullptr;
  std::vector<pid_t> pids_;
  bool broken_ = false;
  std::string broken_reason_;
};

}  // namespace sandwich
