#pragma once
// A tiny Llama with dummy weights and the real Llama-3 vocabulary (128,256 tokens): the
// tokenizer, special tokens and vocabulary size of Llama-3, in a model that steps in a
// millisecond. Written once per test binary into its own temporary folder.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/formats/dummy_model.h"
#include "engine/formats/model_config.h"
#include "engine/text/tokenizer.h"
#include "test_data.h"

namespace sandwich::test {

inline std::filesystem::path llama3_tokenizer_path() {
  return data_dir() / "tokenizers/llama3/tokenizer.model";
}

// dir/llama3-tiny.gguf, made if missing. A real 128k vocabulary makes every mask and sampling
// pass cost what it costs in production, while the layers stay tiny.
inline std::filesystem::path write_llama3_vocab_model(const std::filesystem::path& dir,
                                                      int max_positions = 4096) {
  const auto gguf = dir / "llama3-tiny.gguf";
  if (std::filesystem::exists(gguf)) return gguf;
  std::ofstream(dir / "config.json")
      << nlohmann::json{{"model_type", "llama"},    {"hidden_size", 64},
                        {"num_hidden_layers", 1},   {"num_attention_heads", 4},
                        {"num_key_value_heads", 4}, {"intermediate_size", 128},
                        {"vocab_size", 128256},     {"max_position_embeddings", max_positions}}
             .dump();
  const engine::ModelConfig c = engine::read_model_config(dir / "config.json");
  engine::write_dummy_gguf(c, engine::WeightDType::F32,
                           engine::vocab_from_tokenizer_file(llama3_tokenizer_path()), 0, gguf);
  return gguf;
}

}  // namespace sandwich::test
