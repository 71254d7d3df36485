#pragma once
// The pipeline's state on one node (private to engine/pipeline).
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/pipeline/pipeline.h"
#include "engine/runtime/executor.h"
#include "pipeline/mpi_link.h"
#include "pipeline/step_message.h"

namespace sandwich::engine {

using pipeline::Clock;

struct Pipeline::Impl {
  PipelineOptions options;
  std::unique_ptr<pipeline::MpiLink> link;
  // Head: the workers were started (Start answered), the start-up lines, and a failure that
  // ends the job (the destructor aborts it rather than ending it in order).
  bool started = false;
  std::vector<std::string> lines;
  std::string head_line;
  std::string cpu_note;  // the host's CPUs this node took (share_host_cpus), for its line
  std::atomic<bool> failed{false};
  std::mutex failure_mu;
  std::string failure;
  uint64_t steps = 0;  // the head's steps, numbered for the nodes' messages
  // The step under way, for waiting_for(): what it is, when it was sent, the node it waits for.
  mutable std::mutex wait_mu;
  std::string wait_step;
  Clock::time_point wait_since{};
  int wait_node = -1;
  void set_waiting(const std::string& step, int node);
  // Head: what the steps cost, per phase (0 prefill, 1 decode).
  mutable std::mutex stats_mu;
  PipelineStats stats[2];
  void record(int phase, double wall, int micro_batches, const std::vector<double>& busy);

  int last() const { return link->size() - 1; }
  void fail(const std::string& why);
  std::string failure_text();
  // Head: starts the workers with the head's KV cache and limits; throws naming the node that
  // could not start.
  void start_workers(const KVCache& kv, const ExecutorLimits& limits);
};

// The head's executor of a phase: its own stage, then the workers' (pipeline_executor.cpp).
std::unique_ptr<Executor> make_pipeline_executor(Pipeline::Impl& p, std::unique_ptr<Executor> own,
                                                 const Model& model, const std::string& role);

// A step cut into micro-batches that follow one another through the nodes: decode steps by
// sequences, prefill steps by tokens too (a prompt chunk's pieces go in order, so each finds the
// KV of the ones before it on every node). Pieces keep the batch's order, so their logits and
// hidden rows, put one after the other, are the step's. An entry that wants every token's logits
// or hidden states is not cut. `pieces` is an upper bound.
std::vector<std::vector<BatchEntry>> cut_micro_batches(std::span<const BatchEntry> batch,
                                                       int pieces);
// The automatic count (PipelineOptions::micro_batches 0).
int auto_micro_batches(std::span<const BatchEntry> batch, int nodes);

}  // namespace sandwich::engine
