#pragma once
// A model's weights as the kernels take them (private to engine/: Model holds them behind a
// pointer so its public header needs no kernels).
#include <vector>

#include "engine/formats/model.h"
#include "kernels/gemm.h"

namespace sandwich::engine {

struct LayerWeights {
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  // q/k rows are stored in the rotate-half RoPE layout whatever the file used.
  kernels::PackedWeight wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct ModelWeights {
  kernels::DType dtype = kernels::DType::F32;  // storage of the matrices
  kernels::PackedWeight embedding;             // vocab x dim; read row by row
  kernels::PackedWeight output;                // vocab x dim; the same buffer when tied
  const float* final_norm = nullptr;
  std::vector<LayerWeights> layers;
};

}  // namespace sandwich::engine
