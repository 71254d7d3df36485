// What ExecutorLimits switch on in the forward pass (batch-invariant sums, the ablations).
#include <string>

#include "engine/runtime/executor.h"
#include "runtime/executor_impl.h"

namespace sandwich::engine {

GemmModes gemm_modes(const ExecutorLimits& limits) {
  return {.batch_invariant = limits.batch_invariant, .no_split_k = limits.ablation.no_split_k};
}

std::string AblationSwitches::describe() const {
  return "all-reduce " + std::string(name_of(allreduce, kAllReduceAlgorithmNames)) +
         (no_split_k ? ", no split-k" : ", split-k");
}

}  // namespace sandwich::engine
