#pragma once
// Running forward steps under a service configuration. A one-rank configuration runs in this
// process on a pinned thread team; a configuration of R ranks runs in R processes forked from
// this one, each pinned to its CPUs (and NUMA node) with hwloc, sharing the weights (read-only,
// inherited), the KV cache and an all-reduce segment (shared memory). The engine publishes each
// step in a shared control block and sleeps on a futex until the ranks are done; between steps
// the ranks sleep too. A rank that dies fails the step with a clear error and the whole group is
// stopped, so nothing hangs and no process is left behind.
#include <memory>
#include <span>
#include <string>

#include "engine/batch_entry.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "topotree/service_config.h"

namespace sandwich {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one forward step and writes one row of vocab_size logits per entry with want_logits, in
  // batch order. Throws std::invalid_argument for tokens outside the vocabulary, positions past
  // the context or block tables that do not cover the chunk, std::runtime_error if the step fails.
  virtual void run(std::span<const BatchEntry> batch, float* logits) = 0;
  virtual const topo::ServiceConfig& config() const = 0;
};

struct ExecutorLimits {
  int32_t max_tokens = 512;        // tokens of one step
  int32_t max_entries = 64;        // sequences of one step
  int32_t max_blocks_per_seq = 0;  // 0: enough for the model's context
  // Sum every reduction in an order independent of the batch, so that a sequence's logits are
  // bitwise the same whatever runs beside it (kernels::GemmArgs::batch_invariant); slower.
  bool batch_invariant = false;
};

// Creates the executor of a configuration. Must be called before this process starts threads
// that a forked rank could trip over (it forks for multi-rank configurations).
std::unique_ptr<Executor> make_executor(const Model& model, KVCache& kv,
                                        const topo::ServiceConfig& config,
                                        const ExecutorLimits& limits);

// Test hook: the pids of a multi-rank executor's processes (empty for one rank).
std::vector<int> executor_rank_pids(const Executor& e);

}  // namespace sandwich
