#pragma once
// The storage type of each weight matrix the forward pass multiplies by, as its GEMM sees it:
// "bf16", "f32" or a quantized block type ("q4_k"). A quantized preset mixes types per tensor
// (Q4_K_M gives q6_k to the output head and to some layers' attn_v and ffn_down), so the GEMM
// tuner keys each GEMM by its own matrix's type. Strings, so that this header needs no kernels.
#include <string>
#include <vector>

#include "engine/formats/model_config.h"

namespace sandwich::engine {

class Model;

struct LayerMatrixTypes {
  std::string q, k, v, o, gate, up, down;
};

struct MatrixTypes {
  std::vector<LayerMatrixTypes> layers;
  std::string output;  // the LM head (the embedding's type when the two are tied)
};

// A loaded model's matrices, as they were packed.
MatrixTypes matrix_types(const Model& model);
// Every matrix stored as `type` (dummy weights: "bf16" or "f32").
MatrixTypes uniform_matrix_types(const ModelConfig& c, const std::string& type);

}  // namespace sandwich::engine
