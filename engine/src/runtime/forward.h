#pragma once
// The forward passes, private to engine/ (users run steps through an Executor). ForwardPass runs
// a Llama model over a batch of sequences, each contributing a chunk of new tokens (a prompt chunk
// during prefill, one token during decode). All tokens of the batch go through each GEMM
// together; attention runs per sequence over its pages of the KV cache.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/partition.h"
#include "engine/formats/model.h"
#include "engine/runtime/batch_entry.h"
#include "engine/runtime/kv_cache.h"
#include "formats/model_weights.h"
#include "kernels/attention.h"
#include "kernels/thread_team.h"
#include "runtime/rank_shards.h"

namespace sandwich::engine {

// A tensor-parallel rank's share of the model: KV heads [kv0, kv1) with their query heads, FFN
// columns [f0, f1). TP = 1 is the whole model.
struct RankView {
  int rank = 0;
  int n_ranks = 1;
};

// Sums a buffer across the ranks of a tensor-parallel group (identity for one rank).
class Collective {
 public:
  virtual ~Collective() = default;
  virtual void all_reduce_sum(float* data, size_t n) = 0;
  // Each rank holds `n_local` columns (its slice, at column offset) of an rows x n_total matrix;
  // afterwards every rank holds all of it in `full` (row stride n_total).
  virtual void all_gather_columns(const float* local, int64_t rows, int64_t n_local, int64_t offset,
                                  float* full, int64_t n_total) = 0;
  // Where to keep data that will be all-reduced so the reduction needs no copy (n floats), or
  // nullptr.
  virtual float* reduce_buffer(size_t n) { return nullptr; }
};

// A tensor-parallel rank's share of `model` (rank_shards.h): FFN shards also start on whole
// blocks of quantized down projections (their K: 32 or 256).
RankShards rank_shards(const Model& model, int rank, int n_ranks);

// Refuses (std::invalid_argument, one line) a rank count that does not divide the KV heads or
// whose shards would cut a quantized weight's blocks: the line names the tensor, its type, the
// block size and the rank count, and suggests rank counts that work.
void check_tensor_parallel(const Model& model, int n_ranks);

// How every GEMM of a forward pass runs (the kernels::GemmArgs flags of the same names).
struct GemmModes {
  // Sums in an order independent of the batch, so a token's logits do not depend on what else
  // runs (ExecutorLimits::batch_invariant).
  bool batch_invariant = false;
  bool no_split_k = false;  // AblationSwitches::no_split_k
};

class ForwardPass {
 public:
  // weights: the rank's own (placed_weights.h), which may hold only its part of the split
  // matrices; the model's by default.
  ForwardPass(const Model& model, KVCache& kv, kernels::ThreadTeam& team, RankView view = {},
              Collective* collective = nullptr, GemmModes gemm = {},
              const ModelWeights* weights = nullptr);

  // Runs the batch and writes vocab_size logits per row of each entry's logit_rows() (the last
  // token's with want_logits, every token's with all_logits), in batch order, and the model's dim
  // values per row of hidden_rows() into `hidden` (nullptr: not wanted from this rank). Throws
  // std::invalid_argument for tokens outside the vocabulary, positions past the context or block
  // tables that do not cover the chunk.
  void run(std::span<const BatchEntry> batch, float* logits, float* hidden = nullptr);
  // A pipeline stage (a model of some layers, model.h LayerRange): without the embedding, the
  // residual stream enters from io.in (tokens x dim, in batch order); without the head, it
  // leaves through io.out after the stage's last layer (null: not wanted from this rank) and
  // no logits or final hidden states are made.
  void run(std::span<const BatchEntry> batch, const StageIO& io, float* logits, float* hidden);

  const RankView& view() const { return view_; }

 private:
  struct Step;  // one call's tokens and attention work (forward.cpp)

  void check_batch(std::span<const BatchEntry> batch) const;
  Step plan_step(std::span<const BatchEntry> batch) const;
  void ensure_scratch(int64_t tokens);
  float* residual_stream(int64_t tokens);

  void embed(const Step& s);
  void attention_block(const LayerWeights& L, const kernels::PagedKV& kv, const Step& s);
  void ffn_block(const LayerWeights& L, const Step& s);
  void final_logits(const Step& s, float* logits);
  void final_hidden(const Step& s, float* hidden);

  void norm(const Step& s, const float* weight);
  void rope_and_store_kv(const kernels::PagedKV& kv, const Step& s);
  void attend(const kernels::PagedKV& kv, const Step& s);
  void all_reduce(const Step& s);

  const Model& model_;
  const ModelWeights& w_;
  KVCache& kv_;
  kernels::ThreadTeam& team_;
  RankView view_;
  Collective* collective_;
  GemmModes gemm_;
  // This rank's share: KV heads, their query and KV columns, FFN and vocabulary columns.
  IndexRange kv_heads_, q_cols_, kv_cols_, ffn_cols_, vocab_cols_;
  std::map<std::string, int64_t> attention_key_;  // kernels::attention_key of this rank
  int64_t capacity_ = 0;
  std::vector<float> x_, xb_, q_, k_, v_, att_, h_, last_, logits_local_, shard_scratch_, up_;
};

// A plain, single-sequence forward pass written for clarity, not speed: weights unpacked to f32,
// a contiguous KV cache, double-precision accumulation. Tests hold the fast path against it.
class ReferenceForward {
 public:
  explicit ReferenceForward(const Model& model);
  // Feeds the next token (at position = tokens fed so far) and returns its logits.
  std::vector<float> step(int32_t token);
  // The last token's final hidden state (after the final norm): what embeddings pool.
  const std::vector<float>& hidden() const { return hidden_; }
  int32_t position() const { return pos_; }

 private:
  const Model& model_;
  std::vector<std::vector<float>> wq_, wk_, wv_, wo_, wg_, wu_, wd_;
  std::vector<float> emb_, out_, hidden_;
  std::vector<std::vector<float>> kcache_, vcache_;  // per layer: [pos][kv_dim]
  int32_t pos_ = 0;
};

}  // namespace sandwich::engine
