#pragma once
// Llama models of any shape with dummy weights, for tests that need no real checkpoint: the
// config.json Hugging Face would write, loaded with --load-format dummy.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/formats/model.h"

namespace sandwich::test {

struct LlamaShape {
  int hidden, layers, heads, kv_heads, ffn, vocab, max_positions;
};

// Writes dir/config.json for a Llama of this shape, with the keys of `more` added.
inline void write_llama_config(const std::filesystem::path& dir, const LlamaShape& s,
                               const nlohmann::json& more = nlohmann::json::object()) {
  nlohmann::json cfg = more;
  cfg["model_type"] = "llama";
  cfg["hidden_size"] = s.hidden;
  cfg["num_hidden_layers"] = s.layers;
  cfg["num_attention_heads"] = s.heads;
  cfg["num_key_value_heads"] = s.kv_heads;
  cfg["intermediate_size"] = s.ffn;
  cfg["vocab_size"] = s.vocab;
  cfg["max_position_embeddings"] = s.max_positions;
  std::ofstream(dir / "config.json") << cfg.dump();
}

// Options that load the config.json in `dir` with dummy weights of `dtype`.
inline engine::LoadOptions dummy_weights(const std::filesystem::path& dir,
                                         engine::WeightDType dtype) {
  engine::LoadOptions o;
  o.model = dir.string();
  o.load_format = engine::LoadFormat::Dummy;
  o.dtype = dtype;
  return o;
}

}  // namespace sandwich::test
