#pragma once
// Seeds of the fuzz targets that read models and tokenizers. Such files are not kept in the
// repository: they are derived when the corpus is replayed (or scripts/fuzz.sh runs) from the
// reference data in $SANDWICH_SHARED/data (prefixes, header fields overwritten) or built here.
// So are the hostile chat templates (hostile_templates.h): 20,000-term chains are no files to keep.
// Returns name -> bytes; empty for a target whose seeds are all text in tests/fuzz/corpus/.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf_tensor_pos.h"
#include "hostile_templates.h"
#include "tiny_quant_gguf.h"

namespace sandwich::fuzz {

inline std::string read_prefix(const std::filesystem::path& p, size_t n = std::string::npos) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.substr(0, std::min(n, s.size()));
}

template <typename T>
std::string with_field(std::string s, size_t offset, T v) {
  if (offset + sizeof v <= s.size()) std::memcpy(s.data() + offset, &v, sizeof v);
  return s;
}

// A safetensors file of a one-layer Llama of width 8 (the fuzz target's fixed config.json).
inline std::string tiny_safetensors(bool drop_down_proj, const std::string& dtype = "BF16") {
  struct T {
    const char* name;
    int rows, cols;
  };
  const T tensors[] = {{"model.embed_tokens.weight", 16, 8},
                       {"model.norm.weight", 8, 0},
                       {"model.layers.0.input_layernorm.weight", 8, 0},
                       {"model.layers.0.post_attention_layernorm.weight", 8, 0},
                       {"model.layers.0.self_attn.q_proj.weight", 8, 8},
                       {"model.layers.0.self_attn.k_proj.weight", 4, 8},
                       {"model.layers.0.self_attn.v_proj.weight", 4, 8},
                       {"model.layers.0.self_attn.o_proj.weight", 8, 8},
                       {"model.layers.0.mlp.gate_proj.weight", 16, 8},
                       {"model.layers.0.mlp.up_proj.weight", 16, 8},
                       {"model.layers.0.mlp.down_proj.weight", 8, 16}};
  nlohmann::json h = {{"__metadata__", {{"format", "pt"}}}};
  size_t off = 0;
  for (const T& t : tensors) {
    if (drop_down_proj && std::string(t.name).find("down_proj") != std::string::npos) continue;
    const size_t n = static_cast<size_t>(t.rows) * (t.cols ? t.cols : 1) * 2;
    h[t.name] = {{"dtype", dtype},
                 {"shape", t.cols ? nlohmann::json{t.rows, t.cols} : nlohmann::json{t.rows}},
                 {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string header = h.dump();
  header.resize((header.size() + 7) / 8 * 8, ' ');  // padded as Hugging Face's writer does
  std::string out(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  out += header;
  for (size_t i = 0; i < off; ++i) out += static_cast<char>(i % 2 ? 0x3f : static_cast<char>(i));
  return out;
}

// Quantized models (q4_k with q6_k tensors, q5_k, q8_0) of one layer with 256-wide rows, small
// enough for the target to load whole (model_fuzz_load.h); one cut short, one with a NaN scale.
inline void add_quantized_gguf_seeds(std::map<std::string, std::string>& s) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sandwich-seeds-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (const char* preset : {"q4_k_m", "q5_k_s", "q8_0"})
    s[std::string("tiny_") + preset + ".gguf"] =
        read_prefix(test::write_tiny_quant_gguf(dir, preset, "", 1));
  const std::string q = s["tiny_q4_k_m.gguf"];
  s["tiny_q4_k_m_truncated.gguf"] = q.substr(0, q.size() - 5000);
  const size_t d = test::tensor_data_pos(dir / "tiny-q4_k_m.gguf", "blk.0.attn_q.weight");
  s["tiny_q4_k_m_nan_scale.gguf"] = with_field<uint16_t>(q, d + 144, 0x7e00);  // block 1's d
  std::filesystem::remove_all(dir);
}

// A byte-level BPE tokenizer.json: 256 byte tokens, a few merges, one special token.
inline nlohmann::json tiny_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (int b = 33; b < 127; ++b) vocab[std::string(1, static_cast<char>(b))] = id++;
  for (const char* m : {"th", "the", "in", "an", "Ġt", "Ġthe"}) vocab[m] = id++;
  vocab["Ġ"] = id++;
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", id}, {"content", "<|end|>"}, {"special", true}}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"t h", "th e", "i n", "a n", "Ġ t", "Ġt he"}}}}};
}

// A KL-divergence base file (engine/scoring/kld_base_file.h) of `chunks` chunks of 6 tokens over a
// vocabulary of 5: header, tokens, then 2 scored rows of 5 log-probabilities per chunk.
inline std::string tiny_kld_base(uint32_t chunks) {
  std::string s = "SANDKLD1";
  auto u32 = [&s](uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  for (uint32_t v : {6u, chunks, 5u, 64u, 5u, 8u, 4u, 172u}) u32(v);  // n_ctx ... ffn
  const uint64_t hash = 0x0123456789abcdefull;
  s.append(reinterpret_cast<const char*>(&hash), 8);
  const std::string model = "base.gguf";
  u32(static_cast<uint32_t>(model.size()));
  s += model + std::string((4 - model.size() % 4) % 4, '\0');
  for (uint32_t i = 0; i < 6 * chunks; ++i) u32(i % 5);
  for (uint32_t i = 0; i < 2 * 5 * chunks; ++i) {
    const float lp = -1.6094f;
    s.append(reinterpret_cast<const char*>(&lp), 4);
  }
  return s;
}

inline std::map<std::string, std::string> generated_seeds(const std::string& target,
                                                          const std::filesystem::path& data) {
  std::map<std::string, std::string> s;
  if (target == "gguf") {
    const std::string g = read_prefix(data / "tokenizers/vocab-gguf/ggml-vocab-llama-spm.gguf");
    s["vocab_spm.gguf"] = g;
    s["truncated.gguf"] = g.substr(0, std::min<size_t>(g.size(), 1712));
    s["version1.gguf"] = with_field<uint32_t>(g, 4, 1);
    s["huge_tensor_count.gguf"] = with_field<uint64_t>(g, 8, uint64_t{1} << 60);
    s["huge_kv_count.gguf"] = with_field<uint64_t>(g, 16, uint64_t{1} << 60);
    add_quantized_gguf_seeds(s);
  } else if (target == "llama2c_checkpoint") {
    const std::string c = read_prefix(data / "models/stories260K/stories260K.bin", 3072);
    s["stories260K_3k.bin"] = c;
    s["stories260K_truncated.bin"] = c.substr(0, std::min<size_t>(c.size(), 200));
    s["zero_heads.bin"] = with_field<int32_t>(c, 12, 0);
    s["negative_vocab.bin"] = with_field<int32_t>(c, 20, -512);
    s["versioned_magic.bin"] = with_field<uint32_t>(c, 0, 0x616b3432);
  } else if (target == "llama2c_tokenizer") {
    const std::string t = read_prefix(data / "models/stories260K/tok512.bin");
    s["tok512.bin"] = t;
    s["truncated.bin"] = t.substr(0, std::min<size_t>(t.size(), 1000));
    s["negative_length.bin"] = with_field<int32_t>(t, 8, -5);
  } else if (target == "sentencepiece") {
    const std::string m = read_prefix(data / "tokenizers/llama2/tokenizer.model", 200000);
    s["llama2_prefix.model"] = m;
    s["truncated.model"] = m.substr(0, std::min<size_t>(m.size(), 500));
  } else if (target == "safetensors") {
    const std::string ok = tiny_safetensors(false);
    s["tiny_bf16.safetensors"] = ok;
    s["tiny_f32_dtype.safetensors"] = tiny_safetensors(false, "F32");
    s["bad_dtype.safetensors"] = tiny_safetensors(false, "Q4");
    s["missing_tensor.safetensors"] = tiny_safetensors(true);
    s["truncated.safetensors"] = ok.substr(0, 700);
    s["huge_header_len.safetensors"] = with_field<uint64_t>(ok.substr(0, 10), 0, ~uint64_t{0});
  } else if (target == "kld_base") {
    const std::string b = tiny_kld_base(2);
    s["two_chunks.kld"] = b;
    s["truncated.kld"] = b.substr(0, b.size() - 3);
    s["huge_context.kld"] = with_field<uint32_t>(b, 8, 1u << 30);
    s["huge_everything.kld"] = with_field<uint32_t>(
        with_field<uint32_t>(with_field<uint32_t>(b, 8, 1u << 30), 12, 1u << 30), 16, 1u << 30);
    s["zero_chunks.kld"] = with_field<uint32_t>(b, 12, 0);
    s["long_name.kld"] = with_field<uint32_t>(b, 48, 0xfffffff0u);
    s["token_past_vocab.kld"] = with_field<int32_t>(b, 64, 7);
  } else if (target == "jinja_template" || target == "chat_template") {
    // Strings just under the targets' per-value limit (1 MiB and 64 KiB) to amplify from.
    for (const auto& [name, t] :
         test::hostile_templates(20000, target == "chat_template" ? 60000 : 1000000))
      s["hostile_" + name + ".jinja"] = t;
  } else if (target == "tokenizer_json") {
    nlohmann::json t = tiny_tokenizer_json();
    s["byte_level_bpe.json"] = t.dump();
    s["truncated.json"] = t.dump().substr(0, 300);
    nlohmann::json pairs = t;
    pairs["model"]["merges"] = {{"t", "h"}, {"th", "e"}};
    s["pair_merges.json"] = pairs.dump();
    nlohmann::json bad = t;
    bad["model"]["merges"] = {1, 2};
    s["bad_merge_type.json"] = bad.dump();
    nlohmann::json huge = t;
    huge["added_tokens"][0]["id"] = 1LL << 40;
    s["huge_id.json"] = huge.dump();
    nlohmann::json uni = t;
    uni["model"] = {{"type", "Unigram"}, {"vocab", {{"a", -1.0}, {"b", -2.0}}}};
    s["unigram.json"] = uni.dump();
    nlohmann::json gap = t;  // encoding text with a byte that has no token throws mid-encode
    gap["model"]["vocab"].erase("a");
    s["missing_byte_token.json"] = gap.dump();
  }
  return s;
}

}  // namespace sandwich::fuzz
