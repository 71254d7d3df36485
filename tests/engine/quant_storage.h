#pragma once
// How a file quantized with one of llama.cpp's presets stores a model's matrices, without
// writing it: the preset's block type per tensor (Q4_K_M's mix), kept as blocks by the loader;
// matrices the preset leaves unquantized as BF16, as the loader stores them then.
#include <string>

#include "engine/formats/model_config.h"
#include "engine/formats/quantize_model.h"
#include "kernels/quant_blocks.h"
#include "runtime/weight_placement.h"

namespace sandwich::test {

inline engine::WeightStorage preset_storage(const engine::ModelConfig& c,
                                            const std::string& preset_name) {
  const engine::QuantPreset preset = engine::quant_preset(preset_name).value();
  engine::WeightStorage s(kernels::DType::BF16);
  for (const engine::WeightTensor& t : engine::weight_tensors(c, s)) {
    if (t.k == 0) continue;  // norms stay f32
    const uint32_t type = engine::preset_tensor_type(preset, t.name, t.k, 2, c, !c.tied_embeddings);
    if (const auto q = kernels::qtype_from_ggml(type)) s.quantized[t.name] = *q;
  }
  return s;
}

}  // namespace sandwich::test
