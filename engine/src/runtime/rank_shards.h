#pragma once
// A tensor-parallel rank's share of the model: the forward pass splits its GEMMs by it and the
// weight placement puts each rank's part of the matrices on the rank's NUMA node by it, so the
// two cannot disagree.
#include "common/partition.h"
#include "engine/formats/model_config.h"
#include "kernels/gemm.h"

namespace sandwich::engine {

struct RankShards {
  IndexRange kv_heads;    // its KV heads, with their query heads
  IndexRange q_cols;      // columns of wq; K of wo
  IndexRange kv_cols;     // columns of wk and wv
  IndexRange ffn_cols;    // columns of gate and up; K of down (starts on a panel or a block)
  IndexRange vocab_cols;  // columns of an output head (starts on a panel)
};

// Rank `rank` of `n_ranks`. FFN shards start on multiples of ffn_granularity (0: the 64-column
// panel; quantized weights need whole blocks of the down projection's K too: ffn_granularity()).
// Throws std::invalid_argument if the ranks do not divide the KV heads or the model is too small to
// give every rank FFN and vocabulary columns.
RankShards rank_shards(const ModelConfig& c, int rank, int n_ranks, int64_t ffn_granularity = 0);

// What FFN shards must start on for one layer's gate, up and down projections as packed: the
// GEMM's 64-column panel, whole panels of gate and up (16 rows when quantized) and whole blocks of
// down's K (32 or 256 values when quantized). A model's is the largest over its layers.
int64_t ffn_granularity(const kernels::PackedWeight& gate, const kernels::PackedWeight& up,
                        const kernels::PackedWeight& down);

// The rows of an n-row packed matrix with `panel`-row panels that a GEMM over `cols` reads: whole
// panels (the forward pass computes a range that does not start on a panel panel-aligned).
IndexRange panel_cover(IndexRange cols, int64_t n, int64_t panel);

}  // namespace sandwich::engine
