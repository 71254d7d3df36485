#pragma once
// Pipeline-parallel serving over P identical nodes, predicted from the latency simulator of one
// node. Each node (stage) runs a contiguous range of the layers, the first also the embedding
// and the last the final norm and LM head, under the node's own prefill and decode service
// configurations. A step's hidden states (tokens x dim, f32) cross the link from each stage to
// the next: link latency + bytes / bandwidth.
//
// Prefill: a chunk passes the P stages in turn, so its latency is the sum of the stage times
// plus P - 1 transfers; with chunks of several requests in flight a new chunk can enter every
// "period", the slowest stage (or hop), which bounds the throughput. A prompt's chunks are taken
// one after another (TTFT of a request alone).
// Decode: a batch of B sequences is split into M micro-batches (M >= 2 when P > 1) that follow
// each other through the stages; a step (every sequence one token) takes (M + P - 1) periods of
// the slowest stage at B/M rows plus one hop (the pipeline's fill and drain, its bubble), plus
// the sampled tokens' way back from the last node to the first. Utilization: the stages' busy
// time over P x the step time.
#include <cstdint>
#include <string>
#include <vector>

#include "topotree/service_config.h"
#include "tuner/cluster.h"
#include "tuner/latency_simulator.h"

namespace sandwich::tuner {

// Layers per stage (sum = layers, each >= 1) that minimise the slowest stage when each layer
// costs `layer_cost` and the last stage also `head_cost`; earlier stages take the remainder.
// Throws std::invalid_argument when stages exceed layers.
std::vector<int> balanced_layer_split(int layers, int stages, double layer_cost, double head_cost);

// The pipeline's timing terms, in seconds, from per-stage times of one unit (a chunk, a
// micro-batch) and the time of one hop between stages.
struct PipelineTiming {
  double latency_s = 0;  // one unit through every stage: sum of stages + (P - 1) hops
  double period_s = 0;   // the slowest stage or hop: one unit enters per period when full
  // A step of M micro-batches: (M + P - 1) x (slowest stage + hop; no hop when P = 1).
  double step_s = 0;
  double utilization = 0;  // M x sum of stages / (P x step_s)
};
PipelineTiming pipeline_timing(const std::vector<double>& stage_s, double hop_s,
                               int micro_batches = 1);

struct PipelineStage {
  int first_layer = 0, layers = 0;
  bool embedding = false, head = false;
  double weight_bytes = 0;  // its layers (+ embedding, + norm and head)
  double kv_bytes = 0;      // its layers' KV cache for the sequences planned for
};

struct DecodeEstimate {
  int batch = 1, micro_batches = 1;
  double step_ms = 0, tokens_per_s = 0, utilization = 0;
  double hop_ms = 0;  // one micro-batch's hidden states from a stage to the next (0: P = 1)
};

struct PipelineEstimate {
  int stages = 1;
  std::vector<PipelineStage> split;
  bool fits = true;
  std::string why_not;  // when it does not fit: which node needs how much
  topotree::ServiceConfig prefill, decode;
  double prefill_tokens_per_s = 0;  // chunks of many requests in flight
  double ttft_ms = 0;               // the trace's mean prompt, alone
  int64_t mean_prompt = 0;
  double prefill_hop_ms = 0;              // the mean prompt's first chunk from a stage to the next
  std::vector<DecodeEstimate> decode_at;  // one per batch asked for

  std::string split_text() const;  // "40+40"
};

struct PipelineOptions {
  int stages = 1;
  NodeLink link;
  uint64_t node_memory_bytes = 0;  // 0: not checked
  // The KV cache each node must hold besides its weights: this many sequences of the model's
  // full context.
  int kv_sequences = 16;
  std::vector<int> decode_batches{1, 16};
  int max_micro_batches = 8;
};

// Bytes of the model's weights: one layer, the embedding and the final norm + LM head (the
// embedding's matrix again when tied), at the simulator's bytes per weight.
struct ModelWeightBytes {
  double layer = 0, embedding = 0, head = 0;
  double total(int layers) const { return layers * layer + embedding + head; }
};
ModelWeightBytes model_weight_bytes(const engine::ModelConfig& m, double bytes_per_weight);

// The pipeline under the given configurations of every node: the split balanced on the decode
// configuration's step time at the largest batch asked for, the memory check, the figures.
PipelineEstimate estimate_pipeline(const LatencySimulator& node,
                                   const topotree::ServiceConfig& prefill,
                                   const topotree::ServiceConfig& decode,
                                   const PipelineOptions& options);

}  // namespace sandwich::tuner
