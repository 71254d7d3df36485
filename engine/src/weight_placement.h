#pragma once
// Where the weights of tensor-parallel ranks live on a machine with several NUMA nodes: a plan
// made from the model's shapes and the rank layouts of the service configurations that will run
// (rank processes, each bound to one node). Pure: placed_weights.h carries it out.
//
// One node, the home node, keeps the loaded weight region itself, bound to it in place: its
// ranks read their shards there, and a machine whose ranks all sit on one node copies nothing.
// Every other node that runs ranks gets its own copy of what all ranks read (the embedding, the
// norms, a tied output head) and of its ranks' shards: whole 64-column panels of the
// column-parallel matrices (wq, wk, wv, gate, up, an untied output head) and the K columns of the
// row-parallel ones (wo, down), repacked contiguous so that they stay on 2 MiB pages. A node's
// shards of a matrix are merged into contiguous pieces, configuration by configuration in the
// order given: a rank whose range a piece already holds reads it there (decode's 4 ranks inside
// prefill's 2 on the same nodes cost nothing more), the rest are merged into new pieces. Only
// splits that overlap without nesting (3 ranks against 2) hold their overlap twice, and
// configurations that put the same columns on different nodes pay for a copy on each.
#include <cstddef>
#include <string>
#include <vector>

#include "common/partition.h"
#include "engine/model_config.h"
#include "kernels/dtype.h"

namespace sandwich {

enum class WeightSplit {
  Replicated,  // every rank reads all of it
  Columns,     // each rank reads its output columns
  KRange,      // each rank reads its input columns (K)
};

// Which of a rank's ranges (rank_shards.h) cuts a split tensor.
enum class ShardRange { None, Q, KV, FFN, Vocab };

struct WeightTensor {
  std::string name;  // as in GGUF: "blk.3.ffn_up.weight"
  int64_t n = 0;     // rows (output features), or the length of a vector
  int64_t k = 0;     // columns (input features); 0 for a vector (a norm)
  WeightSplit split = WeightSplit::Replicated;
  ShardRange by = ShardRange::None;
};

// The model's weights as the forward pass splits them.
std::vector<WeightTensor> weight_tensors(const ModelConfig& c);

struct WeightPiece {
  std::string tensor;
  WeightSplit split = WeightSplit::Replicated;
  // Columns: output columns (whole panels); KRange: input columns; Replicated: [0, n).
  IndexRange range;
  size_t bytes = 0;  // packed, as stored on the node
  bool operator==(const WeightPiece&) const = default;
};

struct NodeWeights {
  int node = 0;
  bool home = false;                // keeps the loaded region (every tensor), bound in place
  std::vector<WeightPiece> pieces;  // copies made for this node (none on the home node)
  size_t bytes = 0;                 // held on the node: the whole model on the home node

  // The piece that holds a rank's piece (same tensor, range inside), or nullptr.
  const WeightPiece* holding(const WeightPiece& rank_piece) const;
};

struct WeightPlacementPlan {
  int home = -1;
  std::vector<NodeWeights> nodes;  // the nodes that run ranks, ascending
  const NodeWeights* find(int node) const;
};

inline constexpr int kAutoHome = -1;  // the node with most ranks (ties: the lowest)
inline constexpr int kNoHome = -2;    // every node gets copies (tests of the copies)

// rank_nodes: one list per configuration, the memory node of each rank. Throws
// std::invalid_argument where a configuration cannot split the model (rank_shards).
WeightPlacementPlan plan_weight_placement(const ModelConfig& c, kernels::DType storage,
                                          const std::vector<std::vector<int>>& rank_nodes,
                                          int home = kAutoHome);

// The piece of `t` that rank `rank` of `n_ranks` reads.
WeightPiece rank_piece(const WeightTensor& t, const ModelConfig& c, kernels::DType storage,
                       int rank, int n_ranks);
// The piece of a split tensor over `range` (whole panels for columns).
WeightPiece range_piece(const WeightTensor& t, IndexRange range, kernels::DType storage);

// Bytes of the whole tensor as the loader packs it.
size_t whole_bytes(const WeightTensor& t, kernels::DType storage);

}  // namespace sandwich
