#pragma once
// Test fixtures built from the real stories260K checkpoint: the same weights written as GGUF and
// as a Hugging Face safetensors folder, in F32, F16 or BF16.
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/formats/gguf.h"
#include "engine/formats/model.h"
#include "engine/text/tokenizer.h"
#include "kernels/dtype.h"
#include "test_data.h"

namespace sandwich::test {

inline std::filesystem::path stories_dir() {
  return data_dir() / "models/stories260K";
}

// How the engine's tests load stories260K: the checkpoint with its tokenizer.
inline engine::LoadOptions stories_load_options(int threads = 2) {
  engine::LoadOptions o;
  o.model = (stories_dir() / "stories260K.bin").string();
  o.tokenizer = stories_dir() / "tok512.bin";
  o.threads = threads;
  return o;
}

// The checkpoint read independently of the engine's loader: header + tensors in file order.
struct Llama2cWeights {
  int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  std::map<std::string, std::vector<float>> t;  // GGUF names, row-major, q/k interleaved
};

inline Llama2cWeights read_stories() {
  std::ifstream in(stories_dir() / "stories260K.bin", std::ios::binary);
  int32_t h[7];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  Llama2cWeights w{h[0], h[1], h[2], h[3], h[4], std::abs(h[5]), h[6], {}};
  const int hd = w.dim / w.heads, kv = w.kv_heads * hd;
  auto take = [&](size_t n) {
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
    return v;
  };
  auto name = [](int l, const char* what) {
    return "blk." + std::to_string(l) + "." + what + ".weight";
  };
  auto per_layer = [&](const char* what, size_t n) {
    for (int l = 0; l < w.layers; ++l) w.t[name(l, what)] = take(n);
  };
  w.t["token_embd.weight"] = take(size_t(w.vocab) * w.dim);
  per_layer("attn_norm", w.dim);
  per_layer("attn_q", size_t(w.dim) * w.dim);
  per_layer("attn_k", size_t(kv) * w.dim);
  per_layer("attn_v", size_t(kv) * w.dim);
  per_layer("attn_output", size_t(w.dim) * w.dim);
  per_layer("ffn_norm", w.dim);
  per_layer("ffn_gate", size_t(w.hidden) * w.dim);
  per_layer("ffn_down", size_t(w.dim) * w.hidden);
  per_layer("ffn_up", size_t(w.hidden) * w.dim);
  w.t["output_norm.weight"] = take(w.dim);
  return w;
}

// Rows (out features) and columns of each tensor.
inline std::pair<int64_t, int64_t> shape_of(const Llama2cWeights& w, const std::string& name) {
  const int64_t hd = w.dim / w.heads, kv = w.kv_heads * hd;
  auto ends = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (ends("token_embd")) return {w.vocab, w.dim};
  if (ends("norm")) return {w.dim, 0};
  if (ends("attn_k") || ends("attn_v")) return {kv, w.dim};
  if (ends("ffn_gate") || ends("ffn_up")) return {w.hidden, w.dim};
  if (ends("ffn_down")) return {w.dim, w.hidden};
  return {w.dim, w.dim};
}

inline std::vector<uint8_t> encode(const std::vector<float>& v, kernels::DType dt) {
  std::vector<uint8_t> out(v.size() * kernels::dtype_size(dt));
  for (size_t i = 0; i < v.size(); ++i) kernels::store_from_f32(out.data(), i, dt, v[i]);
  return out;
}

inline uint32_t ggml_type(kernels::DType dt) {
  return dt == kernels::DType::F32 ? 0 : dt == kernels::DType::F16 ? 1 : 30;
}

// GGUF keeps the interleaved q/k rows of the checkpoint.
inline void write_stories_gguf(const std::filesystem::path& out, kernels::DType dt) {
  const auto w = read_stories();
  engine::gguf::Writer g;
  g.set("general.architecture", engine::gguf::Value::of_string("llama"));
  g.set("general.name", engine::gguf::Value::of_string("stories260K"));
  g.set("llama.context_length", engine::gguf::Value::of_u32(w.seq_len));
  g.set("llama.embedding_length", engine::gguf::Value::of_u32(w.dim));
  g.set("llama.block_count", engine::gguf::Value::of_u32(w.layers));
  g.set("llama.feed_forward_length", engine::gguf::Value::of_u32(w.hidden));
  g.set("llama.rope.dimension_count", engine::gguf::Value::of_u32(w.dim / w.heads));
  g.set("llama.attention.head_count", engine::gguf::Value::of_u32(w.heads));
  g.set("llama.attention.head_count_kv", engine::gguf::Value::of_u32(w.kv_heads));
  g.set("llama.attention.layer_norm_rms_epsilon", engine::gguf::Value::of_f32(1e-5f));
  g.set("llama.rope.freq_base", engine::gguf::Value::of_f32(10000.0f));
  engine::vocab_to_gguf(engine::vocab_from_tokenizer_file(stories_dir() / "tok512.bin"), g);
  for (const auto& [name, data] : w.t) {
    auto [rows, cols] = shape_of(w, name);
    const kernels::DType t = cols ? dt : kernels::DType::F32;
    std::vector<uint64_t> dims = cols ? std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)}
                                      : std::vector<uint64_t>{uint64_t(rows)};
    auto bytes = encode(data, t);
    g.add_tensor(name, ggml_type(t), dims,
                 [bytes](uint8_t* d, uint64_t n) { std::memcpy(d, bytes.data(), n); });
  }
  g.write(out);
}

// HF checkpoints pair q/k rows as (i, i + d/2): undo the interleaving per head.
inline std::vector<float> to_rotate_half(const std::vector<float>& m, int64_t rows, int64_t cols,
                                         int64_t hd) {
  std::vector<float> out(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / hd, j = r % hd, half = hd / 2;
    const int64_t src = h * hd + (j < half ? 2 * j : 2 * (j - half) + 1);
    std::copy(m.begin() + src * cols, m.begin() + (src + 1) * cols, out.begin() + r * cols);
  }
  return out;
}

struct StTensor {
  std::string name;
  std::vector<int64_t> shape;
  kernels::DType dtype;
  std::vector<uint8_t> bytes;
};

inline void write_safetensors_file(const std::filesystem::path& path,
                                   const std::vector<StTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (auto& t : tensors) {
    const std::string ds = t.dtype == kernels::DType::F32   ? "F32"
                           : t.dtype == kernels::DType::F16 ? "F16"
                                                            : "BF16";
    header[t.name] = {
        {"dtype", ds}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(path, std::ios::binary);
  uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
}

// A Hugging Face folder: config.json + safetensors (two shards with an index when sharded).
inline void write_stories_hf(const std::filesystem::path& dir, kernels::DType dt, bool sharded) {
  const auto w = read_stories();
  std::filesystem::create_directories(dir);
  nlohmann::json cfg = nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5,
      "rope_theta": 10000.0, "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2,
      "torch_dtype": "float32"})");
  // The shape, key by key in the order the weights file lists it.
  const char* keys[] = {
      "hidden_size",         "intermediate_size", "num_hidden_layers",      "num_attention_heads",
      "num_key_value_heads", "vocab_size",        "max_position_embeddings"};
  const int values[] = {w.dim, w.hidden, w.layers, w.heads, w.kv_heads, w.vocab, w.seq_len};
  for (size_t i = 0; i < std::size(keys); ++i) cfg[keys[i]] = values[i];
  std::ofstream(dir / "config.json") << cfg.dump(2);
  static const std::map<std::string, std::string> hf = {
      {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  const int64_t hd = w.dim / w.heads;
  std::vector<StTensor> all;
  for (const auto& [name, data] : w.t) {
    auto [rows, cols] = shape_of(w, name);
    std::string hf_name;
    std::vector<float> v = data;
    if (name == "token_embd.weight")
      hf_name = "model.embed_tokens.weight";
    else if (name == "output_norm.weight")
      hf_name = "model.norm.weight";
    else {
      const auto dot = name.find('.', 4);
      const std::string layer = name.substr(4, dot - 4);
      const std::string what = name.substr(dot + 1, name.size() - dot - 1 - 7);
      hf_name = "model.layers." + layer + "." + hf.at(what) + ".weight";
      if (what == "attn_q" || what == "attn_k") v = to_rotate_half(v, rows, cols, hd);
    }
    const kernels::DType t = cols ? dt : kernels::DType::F32;
    std::vector<int64_t> shape =
        cols ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
    all.push_back({hf_name, shape, t, encode(v, t)});
  }
  // Norms stay F32 in a BF16/F16 checkpoint, so mixed dtypes are exercised too.
  if (!sharded) {
    write_safetensors_file(dir / "model.safetensors", all);
    return;
  }
  std::vector<StTensor> a, b;
  nlohmann::json index = {{"metadata", nlohmann::json::object()},
                          {"weight_map", nlohmann::json::object()}};
  for (auto& t : all) {
    const bool first =
        t.name.find("layers.0.") != std::string::npos || t.name.find("embed") != std::string::npos;
    (first ? a : b).push_back(t);
    index["weight_map"][t.name] =
        first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors_file(dir / "model-00001-of-00002.safetensors", a);
  write_safetensors_file(dir / "model-00002-of-00002.safetensors", b);
  std::ofstream(dir / "model.safetensors.index.json") << index.dump(2);
}

}  // namespace sandwich::test
