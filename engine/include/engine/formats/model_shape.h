#pragma once
// The sizes that tell one model's shape from another's: what a plan and a KL-divergence base
// record of the model they were made for.
#include <cstdint>

#include "engine/formats/model_config.h"

namespace sandwich::engine {

struct ModelShape {
  int32_t dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0,
          vocab_size = 0;
};

inline ModelShape shape_of(const ModelConfig& c) {
  return {c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size};
}

}  // namespace sandwich::engine
