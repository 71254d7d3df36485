#pragma once
// The shape of a Llama-family model, from a GGUF header, a Hugging Face config.json, a llama2.c
// header or a preset in configs/models/.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sandwich::engine {

struct RopeScaling {
  enum class Type { None, Linear, Llama3 };
  Type type = Type::None;
  float factor = 1.0f;
  // Llama-3.1 ("llama3") scaling: frequencies below low_freq are divided by factor, above
  // high_freq kept, smoothly interpolated between.
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int32_t original_max_position = 8192;
};

// Largest context length (positions) and vocabulary a model may have. Llama 3.1 has 131072
// positions and 128256 tokens; the RoPE tables alone take 8 bytes x head_dim/2 per position.
constexpr int32_t kMaxContext = 1 << 20;
constexpr int32_t kMaxVocab = 1 << 24;

struct ModelConfig {
  std::string name;
  int32_t dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t ffn_dim = 0;
  int32_t vocab_size = 0;
  int32_t max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // Per-frequency divisors from a GGUF rope_freqs tensor (Llama-3.1 GGUFs carry their scaling
  // this way); empty when absent.
  std::vector<float> rope_freq_factors;
  bool tied_embeddings = false;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  // Tokenizer family of presets ("llama2-spm", "llama3-bpe"): what a dummy model gets.
  std::string tokenizer_family;

  // Throws std::runtime_error naming the first inconsistent or out-of-range field, prefixed by
  // `where` (the source file; default: the model's name).
  void validate() const;
  void validate(const std::string& where) const;
  int64_t q_dim() const { return int64_t{n_heads} * head_dim; }
  int64_t kv_dim() const { return int64_t{n_kv_heads} * head_dim; }
  int64_t param_count() const;
};

// Reads a Hugging Face config.json (LlamaForCausalLM keys); `where` names the source in errors.
ModelConfig config_from_hf_json(const nlohmann::json& j, const std::string& where);

// Names of the presets in configs/models/ (file stems).
std::vector<std::string> preset_names();
// Loads configs/models/<name>.json; throws listing the known presets if there is none.
ModelConfig load_preset(const std::string& name);

}  // namespace sandwich::engine
