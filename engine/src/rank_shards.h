#pragma once
// A tensor-parallel rank's share of the model: the forward pass splits its GEMMs by it and the
// weight placement puts each rank's part of the matrices on the rank's NUMA node by it, so the
// two cannot disagree.
#include "common/partition.h"
#include "engine/model_config.h"

namespace sandwich {

struct RankShards {
  IndexRange kv_heads;    // its KV heads, with their query heads
  IndexRange q_cols;      // columns of wq; K of wo
  IndexRange kv_cols;     // columns of wk and wv
  IndexRange ffn_cols;    // columns of gate and up; K of down (starts on a panel or a block)
  IndexRange vocab_cols;  // columns of an output head (starts on a panel)
};

// Rank `rank` of `n_ranks`. FFN shards start on multiples of ffn_granularity (0: the 64-column
// panel; quantized weights need whole blocks of the down projection's K too). Throws
// std::invalid_argument if the ranks do not divide the KV heads or the model is too small to give
// every rank FFN and vocabulary columns.
RankShards rank_shards(const ModelConfig& c, int rank, int n_ranks, int64_t ffn_granularity = 0);

// The columns of an n-column packed matrix that a GEMM over `cols` reads: whole 64-column panels
// (the forward pass computes a range that does not start on a panel panel-aligned).
IndexRange panel_cover(IndexRange cols, int64_t n);

}  // namespace sandwich
