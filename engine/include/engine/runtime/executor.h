#pragma once
// Running forward steps under a service configuration. A one-rank configuration runs in this
// process on a pinned thread team; a configuration of R ranks runs in R processes forked from
// this one, each pinned to its CPUs (and NUMA node) with hwloc, sharing the weights (read-only,
// inherited), the KV cache and an all-reduce segment (shared memory). The engine publishes each
// step in a shared control block and sleeps on a futex until the ranks are done; between steps
// the ranks sleep too. A rank that dies (or fails, or hangs past the step timeout) fails the step
// under way with a clear error; the group is then re-formed from fresh rank processes over the
// same shared weights and KV cache, and serves again. Should that fail, or happen too often, the
// group stops for good and health() says so, so that the process can exit and be restarted.
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/enum_names.h"
#include "engine/formats/model.h"
#include "engine/runtime/batch_entry.h"
#include "engine/runtime/kv_cache.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

// What a multi-rank executor reports about its processes (one-rank executors are always fine).
struct ExecutorHealth {
  bool restarting = false;  // a rank died, failed or hung; the group is being re-formed
  bool failed = false;      // it could not be re-formed: steps fail until the process restarts
  std::string message;      // the last failure, for people
  uint64_t restarts = 0;    // re-formations completed
  double last_recovery_seconds = 0;  // from the failure's detection to serving again
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one forward step and writes vocab_size logits per row of each entry's logit_rows() (the
  // last token's with want_logits, every token's with all_logits), in batch order, and the
  // model's dim values per row of hidden_rows() into `hidden` (may be null when no entry asks).
  // Throws std::invalid_argument for tokens outside the vocabulary, positions past the context or
  // block tables that do not cover the chunk, std::runtime_error if the step fails.
  virtual void run(std::span<const BatchEntry> batch, float* logits, float* hidden) = 0;
  void run(std::span<const BatchEntry> batch, float* logits) { run(batch, logits, nullptr); }
  // The same for a pipeline stage's model (model.h LayerRange): hidden states in and out as
  // StageIO says (tokens x dim each), logits and final hidden states on the last stage only.
  // An executor of a whole model takes an empty StageIO only.
  virtual void run_stage(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                         float* hidden);
  virtual const topotree::ServiceConfig& config() const = 0;
  // Safe to call from any thread.
  virtual ExecutorHealth health() const { return {}; }
};

// The paper's ablations of what Sandwich adds to a plain tensor-parallel engine (its Table 1),
// one switch each; the defaults are Sandwich.
enum class AllReduceAlgorithm {
  RankShifted,  // kernels::ShmAllReduce::all_reduce: reduce-scatter with rank-shifted chunks
  Naive,        // all_reduce_naive: one shared buffer the ranks add into one after another
};
inline constexpr EnumName<AllReduceAlgorithm> kAllReduceAlgorithmNames[] = {
    {AllReduceAlgorithm::RankShifted, "rank-shifted"}, {AllReduceAlgorithm::Naive, "naive"}};
struct AblationSwitches {
  AllReduceAlgorithm allreduce = AllReduceAlgorithm::RankShifted;
  bool no_split_k = false;  // kernels::GemmArgs::no_split_k in every GEMM
  // "all-reduce naive, no split-k" (the defaults named too), for start-up lines and reports.
  std::string describe() const;
};

struct ExecutorLimits {
  int32_t max_tokens = 512;        // tokens of one step
  int32_t max_entries = 64;        // sequences of one step
  int32_t max_blocks_per_seq = 0;  // 0: enough for the model's context
  // Rows of logits one step may return (0: max_entries, the last token of each sequence); steps
  // that ask for all_logits need up to max_tokens. Multi-rank groups keep that many rows in
  // shared memory.
  int32_t max_logit_rows = 0;
  // Rows of hidden state one step may return (0: max_entries); kept in shared memory likewise.
  int32_t max_hidden_rows = 0;
  // Sum every reduction in an order independent of the batch, so that a sequence's logits are
  // bitwise the same whatever runs beside it (kernels::GemmArgs::batch_invariant); slower.
  bool batch_invariant = false;
  AblationSwitches ablation;
  // A step that a rank has not finished by then counts as a hung rank: the group is re-formed.
  double step_timeout_seconds = 300;
  std::string role;  // what the group runs, for the log: "decode" names "the decode rank group"
};

// Creates the executor of a configuration. Best called before this process starts threads that
// a forked child could trip over: for multi-rank configurations it forks the process that forks
// the ranks (then and whenever the group is re-formed).
std::unique_ptr<Executor> make_executor(const Model& model, KVCache& kv,
                                        const topotree::ServiceConfig& config,
                                        const ExecutorLimits& limits);

// Makes the executor of a phase; make_executor's signature (a pipeline's head makes its own).
using ExecutorFactory = std::function<std::unique_ptr<Executor>(
    const Model&, KVCache&, const topotree::ServiceConfig&, const ExecutorLimits&)>;

// Throws std::invalid_argument (one line), as make_executor would, when `ranks` tensor-parallel
// ranks cannot split the model: they do not divide its KV heads, are more than the all-reduce
// takes, or a shard would cut a quantized weight's blocks (the line names the rank counts that
// work). Lets a search leave out the configurations a model cannot run.
void check_rank_count(const Model& model, int ranks);
// check_rank_count as a test: whether `ranks` ranks can split the model (a search's ranks_fit).
bool rank_count_fits(const Model& model, int ranks);

// Test hooks: the pids of a multi-rank executor's rank processes (empty for one rank) and of
// the process that forks them (-1 for one rank).
std::vector<int> executor_rank_pids(const Executor& e);
int executor_spawner_pid(const Executor& e);

}  // namespace sandwich::engine
