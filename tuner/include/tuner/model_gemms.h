#pragma once
// The GEMMs a model runs, as the tuner's shape keys: one rank's q, k, v, o, the gate/up pair,
// down and the LM head, sharded over the ranks of a service configuration exactly as the
// engine's forward pass shards them, each keyed by its own matrix's type (a quantized preset
// mixes q4_k and q6_k matrices of one shape).
#include <vector>

#include "engine/formats/matrix_types.h"
#include "engine/formats/model_config.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::tuner {

// Distinct keys over all ranks (ranks of an uneven split may differ), in the order the forward
// pass first runs them. `threads`: one rank's threads. Throws std::invalid_argument when the
// ranks do not divide the KV heads, the model is too small to split, or a type is not one a
// GEMM runs.
std::vector<kernels::GemmKey> model_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                          const engine::MatrixTypes& types);
// Every matrix of one float type (dummy weights).
std::vector<kernels::GemmKey> model_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                          kernels::DType weights);
// The LM head's keys among them: in a prefill step it runs only for the last token of each
// sequence, so its M is the step's sequence count, not its token count.
std::vector<kernels::GemmKey> lm_head_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                            const engine::MatrixTypes& types);
std::vector<kernels::GemmKey> lm_head_gemms(const engine::ModelConfig& c, int ranks, int threads,
                                            kernels::DType weights);

}  // namespace sandwich::tuner
