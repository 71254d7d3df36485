#pragma once
// Tiny quantized GGUF models for the tests, and ways to damage them as a bad download would.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dummy_llama.h"
#include "engine/formats/dummy_model.h"
#include "engine/formats/gguf.h"
#include "gguf_tensor_pos.h"
#include "test_data.h"

namespace sandwich::test {

// 256-wide rows (one K super-block), 2 layers, untied output: every preset has work to do.
inline engine::ModelConfig tiny_quant_config(const TempDir& dir) {
  const auto folder = dir / "tiny-config";
  std::filesystem::create_directories(folder);
  write_llama_config(folder, {256, 2, 4, 2, 256, 320, 64}, {{"tie_word_embeddings", false}});
  engine::ModelConfig c = engine::read_model_config(folder);
  c.name = "tiny-quant";
  return c;
}

inline std::filesystem::path write_tiny_quantized(const TempDir& dir, const std::string& preset,
                                                  const std::string& file = "") {
  const engine::ModelConfig c = tiny_quant_config(dir);
  const auto out = dir / (file.empty() ? "tiny-" + preset + ".gguf" : file);
  engine::write_dummy_gguf_quantized(c, *engine::quant_preset(preset),
                                     engine::default_dummy_vocab(c), 1, out);
  return out;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
inline void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Position of the header entry of a tensor: right after its name come n_dims and the dims.
inline size_t tensor_header_pos(const std::vector<uint8_t>& b, const std::string& name) {
  const auto it = std::search(b.begin(), b.end(), name.begin(), name.end());
  if (it == b.end()) throw std::runtime_error("no tensor " + name);
  return static_cast<size_t>(it - b.begin()) + name.size();
}

// A copy of `src` with bytes at pos replaced.
inline std::filesystem::path patched(const TempDir& dir, const std::filesystem::path& src,
                                     const std::string& file, size_t pos,
                                     std::vector<uint8_t> bytes) {
  auto b = read_bytes(src);
  std::copy(bytes.begin(), bytes.end(), b.begin() + static_cast<std::ptrdiff_t>(pos));
  const auto out = dir / file;
  write_bytes(out, b);
  return out;
}

inline std::filesystem::path truncated(const TempDir& dir, const std::filesystem::path& src,
                                       size_t cut) {
  auto b = read_bytes(src);
  b.resize(b.size() - cut);
  const auto out = dir / "truncated.gguf";
  write_bytes(out, b);
  return out;
}

// The f16 bit patterns of +infinity and a quiet NaN, little-endian.
inline const std::vector<uint8_t> kF16Inf = {0x00, 0x7c};
inline const std::vector<uint8_t> kF16NaN = {0x00, 0x7e};

}  // namespace sandwich::test
