#include "engine/formats/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "common/paths.h"

namespace sandwich::engine {
namespace {

// A non-negative JSON integer as int32, checked before narrowing (a wrapped 2^32 + 64 would
// otherwise pass as 64).
int32_t as_int32(const nlohmann::json& v, const std::string& key, const std::string& where) {
  if (!v.is_number_integer())
    throw std::runtime_error(where + ": \"" + key + "\" must be an integer, got " + v.dump());
  if (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX
                             : (v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX))
    throw std::runtime_error(where + ": \"" + key + "\" is out of range: " + v.dump());
  return static_cast<int32_t>(v.get<int64_t>());
}

int32_t get_int(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(where + ": missing \"" + key + "\"");
  return as_int32(*it, key, where);
}

float get_float(const nlohmann::json& j, const std::string& key, float def,
                const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number())
    throw std::runtime_error(where + ": \"" + key + "\" must be a number, got " + it->dump());
  return it->get<float>();
}

bool get_bool(const nlohmann::json& j, const char* key, bool def, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean())
    throw std::runtime_error(where + ": \"" + key + "\" must be true or false, got " + it->dump());
  return it->get<bool>();
}

std::string get_string(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string())
    throw std::runtime_error(where + ": \"" + key + "\" must be a string, got " + it->dump());
  return it->get<std::string>();
}

// eos_token_id may be an int or a list (Llama-3 instruct); the first entry is the EOS.
int32_t get_token_id(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return -1;
  if (it->is_number_integer()) return as_int32(*it, key, where);
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer())
    return as_int32((*it)[0], key, where);
  return -1;
}

}  // namespace

void ModelConfig::validate() const {
  validate(name.empty() ? std::string("model") : name);
}

void ModelConfig::validate(const std::string& where) const {
  auto bad = [&](const std::string& what) { throw std::runtime_error(where + ": " + what); };
  if (dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || ffn_dim <= 0 ||
      vocab_size <= 0 || max_seq_len <= 0)
    bad("sizes must be positive (dim, layers, heads, kv heads, ffn, vocab, context)");
  // Far above any released Llama-family model; past them the tables sized by these numbers
  // (RoPE angles per position, weights per layer) no longer fit in memory.
  auto at_most = [&](int64_t v, int64_t max, const char* what) {
    if (v > max)
      bad(std::string(what) + " " + std::to_string(v) + " is above the supported maximum of " +
          std::to_string(max));
  };
  at_most(max_seq_len, kMaxContext, "context length (max_position_embeddings / context_length)");
  at_most(dim, int64_t{1} << 17, "embedding length (dim)");
  at_most(ffn_dim, int64_t{1} << 19, "feed-forward length");
  at_most(n_layers, 4096, "layer count");
  at_most(n_heads, 4096, "head count");
  at_most(vocab_size, kMaxVocab, "vocabulary size");
  if (n_heads % n_kv_heads != 0)
    bad("query heads (" + std::to_string(n_heads) + ") are not a multiple of KV heads (" +
        std::to_string(n_kv_heads) + ")");
  if (head_dim <= 0 || head_dim % 2 != 0) bad("head size must be even and positive");
  if (head_dim > 1024) bad("head size " + std::to_string(head_dim) + " is not supported");
  auto positive = [&](float v, const std::string& what) {
    if (!(v > 0.0f) || !std::isfinite(v))
      bad(what + " must be a finite positive number, got " + std::to_string(v));
  };
  positive(norm_eps, "norm eps");
  positive(rope_theta, "rope theta");
  if (rope_scaling.type != RopeScaling::Type::None)
    positive(rope_scaling.factor, "rope scaling factor");
  if (rope_scaling.type == RopeScaling::Type::Llama3) {
    positive(rope_scaling.low_freq_factor, "rope scaling low_freq_factor");
    positive(rope_scaling.high_freq_factor, "rope scaling high_freq_factor");
    if (!(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))
      bad("rope scaling high_freq_factor must be above low_freq_factor");
    if (rope_scaling.original_max_position <= 0)
      bad("rope scaling original_max_position_embeddings must be positive");
  }
  for (size_t i = 0; i < rope_freq_factors.size(); ++i)
    positive(rope_freq_factors[i], "rope frequency factor " + std::to_string(i));
  if (bos_id >= vocab_size || eos_id >= vocab_size) bad("BOS/EOS id outside the vocabulary");
}

int64_t ModelConfig::param_count() const {
  const int64_t per_layer = int64_t{dim} * (q_dim() + 2 * kv_dim()) + q_dim() * dim +
                            3 * int64_t{dim} * ffn_dim + 2 * int64_t{dim};
  return int64_t{vocab_size} * dim * (tied_embeddings ? 1 : 2) + n_layers * per_layer + dim;
}

ModelConfig config_from_hf_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": not a JSON object");
  if (auto mt = j.find("model_type");
      mt != j.end() && mt->is_string() && *mt != "llama" && *mt != "mistral")
    throw std::runtime_error(where + ": unsupported architecture \"" + mt->get<std::string>() +
                             "\" (Sandwich runs Llama-family models)");
  ModelConfig c;
  c.dim = get_int(j, "hidden_size", where);
  c.n_layers = get_int(j, "num_hidden_layers", where);
  c.n_heads = get_int(j, "num_attention_heads", where);
  c.n_kv_heads =
      j.contains("num_key_value_heads") ? get_int(j, "num_key_value_heads", where) : c.n_heads;
  c.ffn_dim = get_int(j, "intermediate_size", where);
  c.vocab_size = get_int(j, "vocab_size", where);
  c.max_seq_len =
      j.contains("max_position_embeddings") ? get_int(j, "max_position_embeddings", where) : 2048;
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null()
                   ? get_int(j, "head_dim", where)
                   : (c.n_heads ? c.dim / c.n_heads : 0);
  c.norm_eps = get_float(j, "rms_norm_eps", c.norm_eps, where);
  c.rope_theta = get_float(j, "rope_theta", c.rope_theta, where);
  c.tied_embeddings = get_bool(j, "tie_word_embeddings", false, where);
  c.bos_id = get_token_id(j, "bos_token_id", where);
  c.eos_id = get_token_id(j, "eos_token_id", where);
  c.tokenizer_family = get_string(j, "tokenizer_family", where);
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    const std::string in = where + " rope_scaling";
    std::string type = get_string(*rs, "rope_type", in);
    if (type.empty()) type = get_string(*rs, "type", in);
    if (type == "llama3") {
      c.rope_scaling.type = RopeScaling::Type::Llama3;
      c.rope_scaling.factor = get_float(*rs, "factor", 8.0f, in);
      c.rope_scaling.low_freq_factor = get_float(*rs, "low_freq_factor", 1.0f, in);
      c.rope_scaling.high_freq_factor = get_float(*rs, "high_freq_factor", 4.0f, in);
      c.rope_scaling.original_max_position =
          rs->contains("original_max_position_embeddings")
              ? get_int(*rs, "original_max_position_embeddings", in)
              : 8192;
    } else if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::Linear;
      c.rope_scaling.factor = get_float(*rs, "factor", 1.0f, in);
    } else if (!type.empty() && type != "default") {
      throw std::runtime_error(where + ": unsupported rope_scaling type \"" + type + "\"");
    }
  }
  c.validate(where);
  return c;
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
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string known;
    for (auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error(
        "unknown model preset '" + name + "' (known: " +
        (known.empty() ? "none found in " + (configs_dir() / "models").string() : known) + ")");
  }
  ModelConfig c =
      config_from_hf_json(read_json_file(path, file_kinds::kModelMetadata), path.string());
  c.name = name;
  return c;
}

}  // namespace sandwich::engine
