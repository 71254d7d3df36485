// Hugging Face checkpoints: config.json + *.safetensors (one file or shards with an index).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "engine/formats/mapped_file.h"
#include "formats/model_source.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
namespace {

// HF tensor name -> GGUF-style name, or "" for tensors we do not use.
std::string map_name(const std::string& hf) {
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+)\.weight)");
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return "";
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm", "attn_norm"},    {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
  };
  for (auto& [from, to] : kParts)
    if (m[2] == from) return "blk." + m[1].str() + "." + to + ".weight";
  return "";
}

void read_one_file(const fs::path& file, ModelSource& src, const std::set<std::string>* only) {
  auto map = std::make_shared<MappedFile>(file);
  const std::string where = file.string();
  if (map->size() < 8) throw std::runtime_error(where + ": too small to be a safetensors file");
  uint64_t header_len;
  std::memcpy(&header_len, map->data(), 8);
  if (header_len > map->size() - 8 || header_len > (uint64_t{100} << 20))
    throw std::runtime_error(where + ": corrupt or truncated safetensors header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(map->data() + 8, map->data() + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(where + ": corrupt safetensors header (" + e.what() + ")");
  }
  if (!header.is_object())
    throw std::runtime_error(where + ": safetensors header is not an object");
  const uint8_t* data = map->data() + 8 + header_len;
  const uint64_t data_size = map->size() - 8 - header_len;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (only && !only->count(name)) continue;
    const std::string mapped = map_name(name);
    if (mapped.empty()) continue;
    SourceTensor t;
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets"))
      throw std::runtime_error(where + ": tensor '" + name + "' has an incomplete header entry");
    const std::string bad_entry = where + ": tensor '" + name + "' has an invalid ";
    if (!info["dtype"].is_string())
      throw std::runtime_error(bad_entry + "\"dtype\" " + info["dtype"].dump());
    const std::string dt = info["dtype"].get<std::string>();
    if (dt == "F32")
      t.dtype = kernels::DType::F32;
    else if (dt == "BF16")
      t.dtype = kernels::DType::BF16;
    else if (dt == "F16")
      t.dtype = kernels::DType::F16;
    else
      throw std::runtime_error(where + ": tensor '" + name + "' has dtype " + dt +
                               " (supported: F32, BF16, F16)");
    if (!info["shape"].is_array())
      throw std::runtime_error(bad_entry + "\"shape\" " + info["shape"].dump());
    uint64_t elements = 1;
    for (auto& d : info["shape"]) {
      // Bounded so the element count below cannot overflow; no tensor is anywhere near 2^48.
      if (!d.is_number_integer() || d.get<int64_t>() <= 0 ||
          d.get<uint64_t>() > (uint64_t{1} << 48) / elements)
        throw std::runtime_error(bad_entry + "\"shape\" " + info["shape"].dump());
      elements *= d.get<uint64_t>();
      t.shape.push_back(d.get<int64_t>());
    }
    auto& off = info["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      throw std::runtime_error(bad_entry + "\"data_offsets\" " + off.dump());
    const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e || e > data_size)
      throw std::runtime_error(where + ": truncated file: tensor '" + name +
                               "' extends past the end");
    if (e - b != static_cast<uint64_t>(t.elements()) * kernels::dtype_size(t.dtype))
      throw std::runtime_error(where + ": tensor '" + name + "' size does not match its shape");
    t.data = data + b;
    src.tensors[mapped] = t;
  }
  src.keep_alive.push_back(map);
}

fs::path folder_of(const fs::path& p) {
  return fs::is_directory(p) ? p : p.parent_path();
}

}  // namespace

ModelConfig read_hf_config(const fs::path& folder) {
  const fs::path cfg = folder / "config.json";
  if (!fs::exists(cfg))
    throw std::runtime_error(folder.string() +
                             ": no config.json (a Hugging Face model folder needs one)");
  ModelConfig c =
      config_from_hf_json(read_json_file(cfg, file_kinds::kModelMetadata), cfg.string());
  c.name = fs::absolute(folder).lexically_normal().filename().string();
  if (c.name.empty()) c.name = fs::absolute(folder).parent_path().filename().string();
  return c;
}

ModelSource read_safetensors(const fs::path& path) {
  const fs::path folder = folder_of(path);
  ModelSource src;
  src.config = read_hf_config(folder);
  src.rope_layout = RopeLayout::RotateHalf;
  std::vector<fs::path> files;
  if (!fs::is_directory(path)) {
    files.push_back(path);
  } else if (fs::exists(folder / "model.safetensors.index.json")) {
    auto index =
        read_json_file(folder / "model.safetensors.index.json", file_kinds::kModelMetadata);
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw std::runtime_error((folder / "model.safetensors.index.json").string() +
                               ": no weight_map");
    std::set<std::string> shards;
    for (auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string())
        throw std::runtime_error((folder / "model.safetensors.index.json").string() +
                                 ": weight_map entry '" + name +
                                 "' is not a file name: " + file.dump());
      shards.insert(file.get<std::string>());
    }
    for (auto& s : shards) {
      if (!fs::exists(folder / s))
        throw std::runtime_error(folder.string() + ": shard " + s +
                                 " listed in the index is missing");
      files.push_back(folder / s);
    }
  } else if (fs::exists(folder / "model.safetensors")) {
    files.push_back(folder / "model.safetensors");
  } else {
    for (auto& e : fs::directory_iterator(folder))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw std::runtime_error(folder.string() + ": no *.safetensors files");
  }
  for (auto& f : files) read_one_file(f, src, nullptr);
  if (!src.tensors.count("output.weight")) src.config.tied_embeddings = true;
  src.description = "safetensors, " + std::to_string(files.size()) + " file(s), " +
                    std::to_string(src.tensors.size()) + " tensors";
  for (const char* f : {"tokenizer.json", "tokenizer.model"})
    if (fs::exists(folder / f)) src.tokenizer_path = folder;
  src.tokenizer_searched = folder.string() + " (tokenizer.json, tokenizer.model)";
  return src;
}

}  // namespace sandwich::engine
