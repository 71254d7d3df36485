#include "engine/model_config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sandwich {
namespace {

int32_t get_int(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(where + ": missing \"" + key + "\"");
  if (!it->is_number_integer())
    throw std::runtime_error(where + ": \"" + key + "\" must be an integer");
  int64_t v = it->get<int64_t>();
  if (v < 0 || v > INT32_MAX) throw std::runtime_error(where + ": \"" + key + "\" out of range");
  return static_cast<int32_t>(v);
}

// eos_token_id may be an int or a list (Llama-3 instruct); the first entry is the EOS.
int32_t get_token_id(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return -1;
  if (it->is_number_integer()) return it->get<int32_t>();
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return (*it)[0].get<int32_t>();
  return -1;
}

}  // namespace

void ModelConfig::validate() const {
  auto bad = [&](const std::string& what) {
    throw std::runtime_error((name.empty() ? std::string("model") : name) + ": " + what);
  };
  if (dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || ffn_dim <= 0 ||
      vocab_size <= 0 || max_seq_len <= 0)
    bad("sizes must be positive (dim, layers, heads, kv heads, ffn, vocab, context)");
  if (n_heads % n_kv_heads != 0)
    bad("query heads (" + std::to_string(n_heads) + ") are not a multiple of KV heads (" +
        std::to_string(n_kv_heads) + ")");
  if (head_dim <= 0 || head_dim % 2 != 0) bad("head size must be even and positive");
  if (head_dim > 1024) bad("head size " + std::to_string(head_dim) + " is not supported");
  if (!(norm_eps > 0.0f) || !(rope_theta > 0.0f)) bad("norm eps and rope theta must be positive");
  if (rope_scaling.type != RopeScaling::Type::None && !(rope_scaling.factor > 0.0f))
    bad("rope scaling factor must be positive");
  if (bos_id >= vocab_size || eos_id >= vocab_size) bad("BOS/EOS id outside the vocabulary");
}

int64_t ModelConfig::param_count() const {
  const int64_t per_layer = int64_t{dim} * (q_dim() + 2 * kv_dim()) + q_dim() * dim +
                            3 * int64_t{dim} * ffn_dim + 2 * int64_t{dim};
  return int64_t{vocab_size} * dim * (tied_embeddings ? 1 : 2) + n_layers * per_layer + dim;
}

ModelConfig config_from_hf_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": not a JSON object");
  if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string() && *mt != "llama" &&
                                      *mt != "mistral")
    throw std::runtime_error(where + ": unsupported architecture \"" + mt->get<std::string>() +
                             "\" (Sandwich runs Llama-family models)");
  ModelConfig c;
  c.dim = get_int(j, "hidden_size", where);
  c.n_layers = get_int(j, "num_hidden_layers", where);
  c.n_heads = get_int(j, "num_attention_heads", where);
  c.n_kv_heads = j.contains("num_key_value_heads") ? get_int(j, "num_key_value_heads", where) : c.n_heads;
  c.ffn_dim = get_int(j, "intermediate_size", where);
  c.vocab_size = get_int(j, "vocab_size", where);
  c.max_seq_len = j.contains("max_position_embeddings") ? get_int(j, "max_position_embeddings", where) : 2048;
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? get_int(j, "head_dim", where)
                                                                  : (c.n_heads ? c.dim / c.n_heads : 0);
  if (j.contains("rms_norm_eps")) c.norm_eps = j["rms_norm_eps"].get<float>();
  if (j.contains("rope_theta")) c.rope_theta = j["rope_theta"].get<float>();
  c.tied_embeddings = j.value("tie_word_embeddings", false);
  c.bos_id = get_token_id(j, "bos_token_id");
  c.eos_id = get_token_id(j, "eos_token_id");
  c.tokenizer_family = j.value("tokenizer_family", std::string());
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type == "llama3") {
      c.rope_scaling.type = RopeScaling::Type::Llama3;
      c.rope_scaling.factor = rs->value("factor", 8.0f);
      c.rope_scaling.low_freq_factor = rs->value("low_freq_factor", 1.0f);
      c.rope_scaling.high_freq_factor = rs->value("high_freq_factor", 4.0f);
      c.rope_scaling.original_max_position = rs->value("original_max_position_embeddings", 8192);
    } else if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::Linear;
      c.rope_scaling.factor = rs->value("factor", 1.0f);
    } else if (!type.empty() && type != "default") {
      throw std::runtime_error(where + ": unsupported rope_scaling type \"" + type + "\"");
    }
  }
  c.validate();
  return c;
}

std::filesystem::path configs_dir() {
  if (const char* env = std::getenv("SANDWICH_CONFIGS"); env && *env) return env;
  return SANDWICH_CONFIG_DIR;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(configs_dir() / "models", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_preset(const std::string& name) {
  auto path = configs_dir() / "models" / (name + ".json");
  std::ifstream in(path);
  if (!in) {
    std::string known;
    for (auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("unknown model preset '" + name + "' (known: " +
                             (known.empty() ? "none found in " + (configs_dir() / "models").string() : known) + ")");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": invalid JSON: " + e.what());
  }
  ModelConfig c = config_from_hf_json(j, path.string());
  c.name = name;
  return c;
}

}  // namespace sandwich
