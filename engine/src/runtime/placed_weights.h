#pragma once
// The weights each rank of a multi-rank configuration reads, placed on the ranks' NUMA nodes as
// weight_placement.h plans: the loaded region is bound to the home node in place, and each other
// node gets copies of what it lacks, the first time a configuration asks. Copies are kept for the
// model's life, so switching between the prefill and decode configurations moves nothing.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/runtime/shared_region.h"
#include "formats/model_weights.h"
#include "runtime/weight_placement.h"

namespace sandwich::engine {

// How the loaded model stores its matrices (its storage type, and the blocks a quantized file
// kept), as the planner takes it. Throws std::logic_error if the planner would lay a matrix out
// otherwise than the loader did.
WeightStorage weight_storage(const Model& model);

class PlacedWeights {
 public:
  // Each rank's weights for a configuration whose ranks have these memory nodes. Call in the
  // engine process before the ranks are forked: they inherit the copies. Logs a line with the
  // bytes per node when something was placed. Where a node is not available to this process, or
  // the placement fails, every rank reads the loaded region (and the line says why). F32, BF16
  // and quantized matrices, mixed as a quantized file stores them, are placed alike.
  // `home` (kAutoHome, a node, kNoHome) counts only on the first call: the home node stays.
  // Without `bind`, nodes are only names (tests of the copies on a machine that lacks them).
  std::vector<const ModelWeights*> place(const Model& model, const std::vector<int>& rank_nodes,
                                         int home = kAutoHome, bool bind = true);
  // What has been placed so far.
  WeightPlacementPlan plan() const;

 private:
  using PieceKey = std::tuple<int, std::string, int64_t, int64_t>;  // node, tensor, range
  const ModelWeights& view(const Model& model, int node, int rank, int n_ranks);
  void copy_missing(const Model& model, const NodeWeights& node, bool bind);

  mutable std::mutex mu_;
  bool home_chosen_ = false;
  int home_ = kNoHome;
  bool home_bound_ = false;
  std::vector<std::vector<int>> configs_;
  std::unique_ptr<WeightStorage> storage_;  // how the loaded weights are stored, once known
  WeightPlacementPlan plan_;
  std::vector<SharedRegion> regions_;  // the copies, a region per node and placement
  std::map<PieceKey, void*> copies_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<ModelWeights>> views_;  // node, R, rank
};

}  // namespace sandwich::engine
