#pragma once
// Pipeline parallelism across nodes, on MPI. Each node (an MPI process, launched by mpirun) holds
// a contiguous range of the model's layers (the first also the embedding, the last the final
// norm and the output head) and a KV cache of its layers only; inside a node, its own prefill and
// decode service configurations run its layers (tensor-parallel ranks included). Node 0, the
// head, runs the scheduler (and serves); a step goes through the nodes in order as micro-batches,
// hidden states passed on with non-blocking MPI point-to-point messages, and the last node sends
// the logits back to the head. The other nodes are workers: they serve steps until the head ends
// the job. A node that fails or does not answer within the step timeout fails the job: the head
// says which, and the job is aborted (MPI_Abort) so that no process is left behind.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.h"
#include "engine/formats/model.h"
#include "engine/runtime/scheduler.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

struct PipelineOptions {
  int stages = 1;                    // --pipeline-parallel: nodes, one MPI process each
  std::vector<int32_t> layer_split;  // --layer-split: layers per node; empty = balanced
  // --micro-batches: pieces a step is cut into (0: automatic: a decode batch in `stages` pieces,
  // a prefill step in pieces of at least 32 tokens, up to 16 per node).
  int micro_batches = 0;
  // A node that has not answered a step by then has failed (or hangs): the job ends.
  double step_timeout_seconds = 60;
};

// --pipeline-parallel, --layer-split, --micro-batches, --pipeline-timeout.
void add_pipeline_options(ArgParser& p, PipelineOptions& o);

// The nodes' layer ranges: `given` (one count per node, each at least one, summing to the
// model's layers), else balanced: every layer costs the same, and the output head counts as the
// layers a quarter of its matrix's bytes equal (a decode step reads it whole, a prefill step
// barely uses it), so the last node may get fewer layers. Throws std::invalid_argument (one line)
// for a split that does not fit.
std::vector<LayerRange> pipeline_layer_split(const ModelConfig& c, int stages,
                                             const std::vector<int32_t>& given = {});

// What the head's steps of one phase cost: their wall time from the head's first stage to the
// last node's result, and each node's time computing its stage. Utilization: the nodes' busy
// time over nodes x wall time (1 - the pipeline's bubble and the transfers).
struct PipelineStats {
  uint64_t steps = 0, micro_batches = 0;
  double wall_seconds = 0;
  std::vector<double> busy_seconds;  // per node
  double utilization() const;
  // "412 steps of 2.0 micro-batches, 1.84 ms each, utilization 0.71 (node 0 0.80, node 1 0.62)"
  std::string describe() const;
};

// What a node's executors run on beyond the model: its own service configurations (one rank of
// all its cores when unset).
struct PipelineNodeOptions {
  std::optional<topotree::ServiceConfig> prefill_config, decode_config;
};

class Pipeline {
 public:
  // Joins the MPI job started by mpirun (MPI_Init), or returns null for one stage outside mpirun.
  // Throws std::runtime_error (one line) when the job's process count is not `stages` (including
  // a job of several processes for a program told of one stage), or MPI cannot start.
  static std::unique_ptr<Pipeline> join(const PipelineOptions& options);
  ~Pipeline();  // MPI_Finalize; after a failure, MPI_Abort ends every node

  int node() const;
  int nodes() const;
  bool head() const { return node() == 0; }
  // "node 1 (hostname)".
  std::string node_name(int node) const;
  // This node's layers of a model of shape `c` (the split is computed alike on every node).
  LayerRange layers(const ModelConfig& c) const;

  // Head: makes the scheduler's executors (SchedulerOptions::executor_factory): this node's own,
  // run as the first stage, with the workers' behind it. The first call starts the workers' KV
  // caches (as many blocks as the head's) and executors, and throws (one line naming the node)
  // if one cannot.
  ExecutorFactory executor_factory();
  // Head, after the executors are made: one start-up line per node (layers, weight bytes, KV
  // cache, service configurations).
  std::vector<std::string> node_lines() const;
  // Worker: serves steps until the head ends the job (0), or fails (1, with a line on stderr).
  int serve(const Model& model, const PipelineNodeOptions& options);
  // The line a node gives for itself; the head's own, set before its executors are made.
  static std::string describe_node(const Model& model, const topotree::ServiceConfig& prefill,
                                   const topotree::ServiceConfig& decode);
  void set_head_options(const Model& model, const PipelineNodeOptions& options);
  // Head: what a step waits for ("node 1 (host) had not finished decode step 12") when one waits
  // for a node 250 ms or more within the next half second (which this call may block); else "".
  // Safe from any thread.
  std::string waiting_for() const;
  // Head: the steps so far, of prefill (0) and decode (1); printed when the job ends.
  PipelineStats stats(int phase) const;

  struct Impl;

 private:
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::engine
