// llama.cpp's quantization presets and its per-tensor type rules for Llama models (the rules
// of llama_tensor_get_type in llama.cpp's src/llama-quant.cpp, for the presets we write).
#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "engine/formats/gguf.h"
#include "engine/formats/quantize_model.h"

namespace sandwich::engine {
namespace {

using gguf::TensorType;

constexpr uint32_t id(TensorType t) {
  return static_cast<uint32_t>(t);
}

// llama_ftype values.
const QuantPreset kPresets[] = {
    {"q8_0", id(TensorType::Q8_0), 7},        {"q4_0", id(TensorType::Q4_0), 2},
    {"q4_1", id(TensorType::Q4_1), 3},        {"q5_0", id(TensorType::Q5_0), 8},
    {"q5_1", id(TensorType::Q5_1), 9},        {"q4_k_m", id(TensorType::Q4_K), 15},
    {"q4_k_s", id(TensorType::Q4_K), 14},     {"q5_k_m", id(TensorType::Q5_K), 17},
    {"q5_k_s", id(TensorType::Q5_K), 16},     {"q6_k", id(TensorType::Q6_K), 18},
    {"q4_k", id(TensorType::Q4_K), 15, true}, {"q5_k", id(TensorType::Q5_K), 17, true},
};

// llama-quantize's unquantized outputs: every matrix in the type, vectors f32.
const QuantPreset kPlainPresets[] = {
    {"f32", id(TensorType::F32), 0, true},
    {"f16", id(TensorType::F16), 1, true},
    {"bf16", id(TensorType::BF16), 32, true},
};

std::string lower_case(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// Layers that get more bits: the first and last eighth, and every third one between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

}  // namespace

std::optional<QuantPreset> quant_preset(std::string_view name) {
  const std::string lower = lower_case(name);
  for (const auto& p : kPresets)
    if (p.name == lower) return p;
  return std::nullopt;
}

std::optional<QuantPreset> plain_preset(std::string_view name) {
  const std::string lower = lower_case(name);
  for (const auto& p : kPlainPresets)
    if (p.name == lower) return p;
  return std::nullopt;
}

std::string quant_preset_names() {
  std::string s;
  for (const auto& p : kPresets) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

std::optional<std::string> quant_preset_of_file_type(uint32_t file_type) {
  for (const auto& p : kPresets)
    if (p.file_type == file_type && !p.pure) return p.name;
  return std::nullopt;
}

uint32_t preset_tensor_type(const QuantPreset& p, const std::string& name, int64_t row_len,
                            int ndims, const ModelConfig& c, bool has_output) {
  const bool weight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
  if (!weight || ndims < 2 || contains(name, "_norm.weight")) return id(TensorType::F32);
  const uint32_t base = p.base_type;
  uint32_t t = base;
  auto is = [&](const char* preset) { return p.name == preset; };
  const int layer = layer_of(name);
  if (!p.pure) {
    if (name == "output.weight" || (!has_output && name == "token_embd.weight")) {
      if (row_len % gguf::tensor_type_block_elems(t) != 0)
        t = id(TensorType::Q8_0);
      else if (t != id(TensorType::Q8_0))
        t = id(TensorType::Q6_K);
    } else if (contains(name, "attn_v.weight")) {
      if ((is("q4_k_m") || is("q5_k_m")) && use_more_bits(layer, c.n_layers))
        t = id(TensorType::Q6_K);
      else if (is("q4_k_s") && layer < 4)
        t = id(TensorType::Q5_K);
      // llama.cpp's 70B (80 layers): 8 query heads share each v head, so v gets more bits.
      if (c.n_layers == 80 && t == id(TensorType::Q4_K)) t = id(TensorType::Q5_K);
    } else if (contains(name, "ffn_down")) {
      if ((is("q4_k_m") || is("q5_k_m")) && use_more_bits(layer, c.n_layers))
        t = id(TensorType::Q6_K);
      else if (is("q4_k_s") && layer < c.n_layers / 8)
        t = id(TensorType::Q5_K);
    } else if (contains(name, "attn_qkv.weight")) {
      if (is("q4_k_m")) t = id(TensorType::Q5_K);
      if (is("q5_k_m")) t = id(TensorType::Q6_K);
    }
  }
  if (row_len % gguf::tensor_type_block_elems(t) != 0) {
    // llama.cpp's fallbacks for rows that are not whole 256-value super-blocks.
    switch (static_cast<TensorType>(t)) {
      case TensorType::Q4_K:
        t = id(TensorType::Q5_0);
        break;
      case TensorType::Q5_K:
        t = id(TensorType::Q5_1);
        break;
      case TensorType::Q6_K:
        t = id(TensorType::Q8_0);
        break;
      case TensorType::Q4_0:
      case TensorType::Q4_1:
      case TensorType::Q5_0:
      case TensorType::Q5_1:
      case TensorType::Q8_0:
        // llama-quantize refuses such a tensor ("Unsupported tensor size"), so it cannot write
        // stories260K (ffn_down's rows are 172 values) in these types at all. We keep the
        // tensor F32, which llama.cpp loads and computes exactly: every other tensor is still
        // what llama-quantize writes.
        return id(TensorType::F32);
      default:
        throw std::runtime_error("tensor '" + name + "' has rows of " + std::to_string(row_len) +
                                 " values, which " + gguf::tensor_type_name(t) +
                                 " cannot hold (it needs a multiple of " +
                                 std::to_string(gguf::tensor_type_block_elems(t)) + ")");
    }
    if (row_len % gguf::tensor_type_block_elems(t) != 0) t = id(TensorType::F16);
  }
  return t;
}

}  // namespace sandwich::engine
