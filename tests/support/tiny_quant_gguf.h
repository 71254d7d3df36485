#pragma once
// A tiny quantized GGUF with llama.cpp's per-tensor type mix and dummy weights, for the tests of
// tools that take a model file (test binaries that link the engine): 256-wide rows (one K-type
// super-block), 2 layers, untied output, so that Q4_K_M holds q4_k and q6_k matrices.
#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/dummy_model.h"
#include "engine/formats/model_config.h"
#include "engine/formats/quantize_model.h"

namespace sandwich::test {

inline engine::ModelConfig tiny_quant_model_config(int layers = 2) {
  const nlohmann::json hf = {{"model_type", "llama"},       {"hidden_size", 256},
                             {"num_hidden_layers", layers}, {"num_attention_heads", 4},
                             {"num_key_value_heads", 2},    {"intermediate_size", 256},
                             {"vocab_size", 320},           {"max_position_embeddings", 64},
                             {"tie_word_embeddings", false}};
  engine::ModelConfig c = engine::config_from_hf_json(hf, "tiny_quant_model_config");
  c.name = "tiny-quant";
  return c;
}

// dir/tiny-PRESET.gguf (or dir/file) quantized with the preset ("q4_k_m", "q8_0", ...).
inline std::filesystem::path write_tiny_quant_gguf(const std::filesystem::path& dir,
                                                   const std::string& preset,
                                                   const std::string& file = "", int layers = 2) {
  const auto p = engine::quant_preset(preset);
  if (!p) throw std::invalid_argument("no quantization preset " + preset);
  const engine::ModelConfig c = tiny_quant_model_config(layers);
  const auto out = dir / (file.empty() ? "tiny-" + preset + ".gguf" : file);
  engine::write_dummy_gguf_quantized(c, *p, engine::default_dummy_vocab(c), 1, out);
  return out;
}

}  // namespace sandwich::test
