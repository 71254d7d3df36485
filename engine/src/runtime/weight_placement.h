#pragma once
// Where the weights of tensor-parallel ranks live on a machine with several NUMA nodes: a plan
// made from the model's shapes, how each matrix is packed, and the rank layouts of the service
// configurations that will run (rank processes, each bound to one node). Pure: placed_weights.h
// carries it out.
//
// One node, the home node, keeps the loaded weight region itself, bound to it in place: its
// ranks read their shards there, and a machine whose ranks all sit on one node copies nothing.
// Every other node that runs ranks gets its own copy of what all ranks read (the embedding, the
// norms, a tied output head) and of its ranks' shards: whole panels of the column-parallel
// matrices (wq, wk, wv, gate, up, an untied output head; 64 columns, or 16 rows of quantized
// blocks) and the K columns of the row-parallel ones (wo, down; whole blocks of every panel when
// quantized), repacked contiguous so that they stay on 2 MiB pages. A node's shards of a matrix
// are merged into contiguous pieces, configuration by configuration in the order given: a rank
// whose range a piece already holds reads it there (decode's 4 ranks inside prefill's 2 on the
// same nodes cost nothing more), the rest are merged into new pieces. Only splits that overlap
// without nesting (3 ranks against 2) hold their overlap twice, and configurations that put the
// same columns on different nodes pay for a copy on each. Bytes are the packed ones: a quantized
// file's mix of block types (Q4_K_M: q4_k, q6_k and f32) counts each matrix as stored.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "common/partition.h"
#include "engine/formats/layer_range.h"
#include "engine/formats/model_config.h"
#include "kernels/gemm.h"
#include "runtime/rank_shards.h"

namespace sandwich::engine {

enum class WeightSplit {
  Replicated,  // every rank reads all of it
  Columns,     // each rank reads its output columns
  KRange,      // each rank reads its input columns (K)
};

// Which of a rank's ranges (rank_shards.h) cuts a split tensor.
enum class ShardRange { None, Q, KV, FFN, Vocab };

// How the loader stores the matrices: as `dtype` (F32 or BF16), but those a quantized file holds
// in ggml blocks keep them (kernels' quantized panels).
struct WeightStorage {
  kernels::DType dtype = kernels::DType::BF16;
  std::map<std::string, kernels::QType> quantized;  // by tensor name
  // A pipeline stage's layers: its weights hold only these (and the embedding where it holds
  // layer 0, the final norm and head where it holds the last).
  LayerRange layers;

  WeightStorage() = default;
  WeightStorage(kernels::DType d) : dtype(d) {}  // every matrix as d (implicit: it says all)
  // The packed layout of the n x k matrix `name` (every field but data).
  kernels::PackedWeight layout(const std::string& name, int64_t n, int64_t k) const;
};

struct WeightTensor {
  std::string name;  // as in GGUF: "blk.3.ffn_up.weight"
  int64_t n = 0;     // rows (output features), or the length of a vector
  int64_t k = 0;     // columns (input features); 0 for a vector (a norm, f32)
  WeightSplit split = WeightSplit::Replicated;
  ShardRange by = ShardRange::None;
  kernels::PackedWeight layout;  // a matrix's, as the loader packs it (data unset)
};

// The model's weights as the forward pass splits them, packed as `storage` says: those of its
// layers only.
std::vector<WeightTensor> weight_tensors(const ModelConfig& c, const WeightStorage& storage);

// Rank `rank` of `n_ranks`'s ranges over these tensors: rank_shards() with the FFN granularity
// their layouts need, as the forward pass computes it from the loaded weights.
RankShards rank_shards(const ModelConfig& c, const std::vector<WeightTensor>& tensors, int rank,
                       int n_ranks);

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
WeightPlacementPlan plan_weight_placement(const ModelConfig& c, const WeightStorage& storage,
                                          const std::vector<std::vector<int>>& rank_nodes,
                                          int home = kAutoHome);

// The piece of `t` a rank with ranges `shards` reads.
WeightPiece rank_piece(const WeightTensor& t, const RankShards& shards);
// The piece of a split tensor over `range` (whole panels for columns; whole blocks for K).
WeightPiece range_piece(const WeightTensor& t, IndexRange range);

// Bytes of the whole tensor as the loader packs it.
size_t whole_bytes(const WeightTensor& t);

}  // namespace sandwich::engine
