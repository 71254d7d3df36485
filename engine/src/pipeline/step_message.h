#pragma once
// The pipeline's messages: a step's micro-batch going from node to node (its entries, tokens,
// block tables and the hidden states leaving the node before), its result going back to the head
// (logits and final hidden states, or the error), the start of the workers and the end of the job.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/batch_entry.h"
#include "pipeline/mpi_link.h"

namespace sandwich::engine::pipeline {

// MPI tags: along the chain of nodes (head to node 1 to node 2 ...), back to the head (results,
// start-up answers), and the nodes' notes to the head that a micro-batch went through them.
enum Tag : int { kTagChain = 1, kTagReply = 2, kTagProgress = 3 };

enum class Kind : uint32_t { Start = 1, Step = 2, Result = 3, Shutdown = 4, Failed = 5 };

// What the head tells the workers when it starts them (its KV cache and executor limits).
struct StartInfo {
  int32_t kv_blocks = 0;
  int32_t kv_dtype = 0;  // KVCacheDType
  int32_t max_tokens = 0, max_entries = 0, max_logit_rows = 0, max_hidden_rows = 0;
  int32_t batch_invariant = 0;
  int32_t allreduce = 0, no_split_k = 0;  // ExecutorLimits::ablation (AllReduceAlgorithm)
  double step_timeout_seconds = 0;
};

struct Message {
  Kind kind = Kind::Step;
  uint32_t phase = 0;  // Step: 0 prefill, 1 decode
  uint64_t step = 0;   // the head's step count
  uint32_t micro = 0;  // micro-batch of the step
  StartInfo start;
  struct Entry {
    int32_t token_offset, n_tokens, start_pos, table_offset, n_blocks, want_logits, all_logits,
        hidden;
  };
  std::vector<Entry> entries;
  std::vector<int32_t> tokens, tables;
  // Step: the hidden states entering the next node (tokens x dim). Result: the logits rows, then
  // the hidden rows.
  std::vector<float> rows;
  int32_t logit_rows = 0, hidden_rows = 0;
  double busy_seconds = 0;  // Result and notes: the sending node's time on the micro-batch
  std::string text;         // Failed / Result with an error / the start-up answer: for people

  // The batch the entries describe (spans into this message).
  std::vector<BatchEntry> batch() const;
  // Copies `batch`'s entries, tokens and tables in.
  void set_batch(std::span<const BatchEntry> batch);
};

Bytes encode(const Message& m);
// Throws std::runtime_error for a message that is not one of ours.
Message decode(const Bytes& bytes);

}  // namespace sandwich::engine::pipeline
