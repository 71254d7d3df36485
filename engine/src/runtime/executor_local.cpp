// One-rank configurations: the forward pass runs in this process on a pinned thread team.
#include <stdexcept>

#include "runtime/executor_impl.h"

namespace sandwich::engine {

LocalExecutor::LocalExecutor(const Model& model, KVCache& kv, const topotree::ServiceConfig& config,
                             GemmModes gemm)
    : config_(config),
      team_(static_cast<int>(config.ranks.at(0).cpus.size()), config.ranks[0].cpus),
      fp_(model, kv, team_, {}, nullptr, gemm) {}

void LocalExecutor::run(std::span<const BatchEntry> batch, float* logits, float* hidden) {
  fp_.run(batch, logits, hidden);
}

void LocalExecutor::run_stage(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                              float* hidden) {
  fp_.run(batch, io, logits, hidden);
}

void Executor::run_stage(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                         float* hidden) {
  if (io.in || io.out) throw std::logic_error("this executor does not run pipeline stages");
  run(batch, logits, hidden);
}

std::unique_ptr<Executor> make_executor(const Model& model, KVCache& kv,
                                        const topotree::ServiceConfig& config,
                                        const ExecutorLimits& limits) {
  if (config.ranks.empty()) throw std::invalid_argument("the service configuration has no ranks");
  if (config.rank_count() == 1)
    return std::make_unique<LocalExecutor>(model, kv, config, gemm_modes(limits));
  return std::make_unique<RankGroupExecutor>(model, kv, config, limits);
}

std::vector<int> executor_rank_pids(const Executor& e) {
  if (auto* g = dynamic_cast<const RankGroupExecutor*>(&e)) return g->pids();
  return {};
}

int executor_spawner_pid(const Executor& e) {
  if (auto* g = dynamic_cast<const RankGroupExecutor*>(&e)) return g->spawner_pid();
  return -1;
}

}  // namespace sandwich::engine
