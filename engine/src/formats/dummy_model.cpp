#include "engine/formats/dummy_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/formats/gguf.h"
#include "formats/dummy_tensor.h"
#include "formats/gguf_llama_layout.h"
#include "formats/gguf_tensor_rows.h"
#include "formats/model_source.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool is_norm(const std::string& name) {
  return name.find("norm") != std::string::npos;
}

}  // namespace

namespace {

// Writes one row of uniform(-a, a) values in the element type T (f32 or a 16-bit pattern).
template <class Store>
void fill_row(uint64_t state, int64_t width, float a, Store store) {
  for (int64_t c = 0; c < width; c += 2) {
    const uint64_t bits = splitmix64(state);
    // Two 23-bit mantissas per draw: 1.m is uniform in [1, 2).
    const float u0 = std::bit_cast<float>(0x3f800000u | static_cast<uint32_t>(bits >> 41)) - 1.5f;
    const float u1 =
        std::bit_cast<float>(0x3f800000u | static_cast<uint32_t>((bits >> 9) & 0x7fffffu)) - 1.5f;
    store(c, 2.0f * a * u0);
    if (c + 1 < width) store(c + 1, 2.0f * a * u1);
  }
}

}  // namespace

void fill_dummy_tensor(const std::string& name, int64_t rows, int64_t cols, kernels::DType dtype,
                       uint64_t seed, int64_t r0, int64_t r1, void* dst) {
  const int64_t width = cols > 0 ? cols : 1;
  const size_t es = kernels::dtype_size(dtype);
  if (is_norm(name)) {
    for (int64_t i = r0 * width; i < r1 * width; ++i)
      kernels::store_from_f32(static_cast<uint8_t*>(dst) + (i - r0 * width) * es, 0, dtype, 1.0f);
    return;
  }
  // Uniform(-a, a) has variance a^2/3; a = sqrt(3/cols) gives variance 1/cols. Embedding rows
  // get variance 1 so the first RMSNorm sees a unit-scale residual stream.
  const bool embedding = name == "token_embd.weight";
  const float a = embedding ? std::sqrt(3.0f) : std::sqrt(3.0f / static_cast<float>(width));
  const uint64_t base = fnv1a(name) ^ (seed * 0x9e3779b97f4a7c15ull);
  for (int64_t r = r0; r < r1; ++r) {
    const uint64_t state = base + static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ull;
    uint8_t* row = static_cast<uint8_t*>(dst) + static_cast<size_t>((r - r0) * width) * es;
    switch (dtype) {
      case kernels::DType::F32:
        fill_row(state, width, a,
                 [&](int64_t c, float v) { reinterpret_cast<float*>(row)[c] = v; });
        break;
      case kernels::DType::BF16:
        fill_row(state, width, a, [&](int64_t c, float v) {
          reinterpret_cast<uint16_t*>(row)[c] = kernels::f32_to_bf16(v);
        });
        break;
      case kernels::DType::F16:
        fill_row(state, width, a, [&](int64_t c, float v) {
          reinterpret_cast<uint16_t*>(row)[c] = kernels::f32_to_f16(v);
        });
        break;
    }
  }
}

Vocab default_dummy_vocab(const ModelConfig& config) {
  const bool bpe = config.tokenizer_family == "llama3-bpe" || config.vocab_size > 100000;
  Vocab v = make_synthetic_vocab(bpe ? Vocab::Kind::ByteLevelBPE : Vocab::Kind::SentencePiece,
                                 config.vocab_size);
  return v;
}

void pad_dummy_vocab(Vocab& vocab, const ModelConfig& config) {
  if (static_cast<int32_t>(vocab.tokens.size()) > config.vocab_size)
    throw std::invalid_argument("the vocabulary has " + std::to_string(vocab.tokens.size()) +
                                " tokens, the preset only " + std::to_string(config.vocab_size));
  for (int32_t i = static_cast<int32_t>(vocab.tokens.size()); i < config.vocab_size; ++i) {
    vocab.tokens.push_back("<unused_" + std::to_string(i) + ">");
    if (!vocab.scores.empty()) vocab.scores.push_back(-1e9f);
    if (!vocab.types.empty()) vocab.types.push_back(TokenType::Unused);
  }
}

void write_dummy_gguf(const ModelConfig& c, WeightDType weight_dtype, const Vocab& vocab,
                      uint64_t seed, const std::filesystem::path& out) {
  const kernels::DType dtype =
      weight_dtype == WeightDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
  if (static_cast<int64_t>(vocab.tokens.size()) != c.vocab_size)
    throw std::invalid_argument("vocabulary has " + std::to_string(vocab.tokens.size()) +
                                " tokens but the model expects " + std::to_string(c.vocab_size));
  gguf::Writer w;
  // llama.cpp's file types: 0 = all F32, 32 = mostly BF16.
  set_llama_metadata(c, vocab, dtype == kernels::DType::F32 ? 0 : 32, w);

  const uint32_t mat_type = dtype == kernels::DType::F32 ? 0 : 30;
  // The loader turns GGUF's interleaved q/k rows into the rotate-half layout; writing canonical
  // row j at the file row it will be read from makes this file load into exactly the weights
  // --load-format dummy gives.
  const int64_t hd = c.head_dim;
  auto file_row = [&](int64_t j) { return interleaved_row(j, hd); };
  auto add = [&](const std::string& name, int64_t rows, int64_t cols, bool matrix) {
    const bool rope_rows =
        name.find("attn_q") != std::string::npos || name.find("attn_k") != std::string::npos;
    const kernels::DType dt = matrix ? dtype : kernels::DType::F32;
    std::vector<uint64_t> dims =
        cols ? std::vector<uint64_t>{static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}
             : std::vector<uint64_t>{static_cast<uint64_t>(rows)};
    w.add_tensor(name, matrix ? mat_type : 0, dims, [=](uint8_t* dst, uint64_t) {
      const int64_t chunk = 64;
      const size_t row_bytes = static_cast<size_t>(cols ? cols : 1) * kernels::dtype_size(dt);
#pragma omp parallel for schedule(dynamic)
      for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t r1 = std::min(rows, r + chunk);
        if (!rope_rows) {
          fill_dummy_tensor(name, rows, cols, dt, seed, r, r1,
                            dst + static_cast<size_t>(r) * row_bytes);
          continue;
        }
        for (int64_t j = r; j < r1; ++j)
          fill_dummy_tensor(name, rows, cols, dt, seed, j, j + 1,
                            dst + static_cast<size_t>(file_row(j)) * row_bytes);
      }
    });
  };
  for (const auto& t : llama_tensor_specs(c)) add(t.name, t.rows, t.cols, t.cols != 0);
  w.write(out);
}

void write_dummy_gguf_quantized(const ModelConfig& c, const QuantPreset& preset, const Vocab& vocab,
                                uint64_t seed, const fs::path& out) {
  if (static_cast<int64_t>(vocab.tokens.size()) != c.vocab_size)
    throw std::invalid_argument("vocabulary has " + std::to_string(vocab.tokens.size()) +
                                " tokens but the model expects " + std::to_string(c.vocab_size));
  gguf::Writer w;
  set_llama_metadata(c, vocab, preset.file_type, w);
  w.set("general.quantization_version", gguf::Value::of_u32(2));
  for (const auto& t : llama_tensor_specs(c)) {
    const uint32_t type = preset_tensor_type(preset, t.name, t.cols ? t.cols : t.rows,
                                             t.cols ? 2 : 1, c, !c.tied_embeddings);
    const int64_t hd = c.head_dim;
    // File row f holds the canonical (rotate-half) row the loader will read it as.
    add_tensor_rows(w, t.name, type, t.rows, t.cols,
                    [name = t.name, rows = t.rows, cols = t.cols, rope = t.rope_rows, hd, seed](
                        int64_t r0, int64_t r1, float* dst) {
                      if (!cols) {
                        fill_dummy_tensor(name, rows, 0, kernels::DType::F32, seed, 0, rows, dst);
                        return;
                      }
                      for (int64_t f = r0; f < r1; ++f) {
                        const int64_t j = rope ? rotate_half_row(f, hd) : f;
                        fill_dummy_tensor(name, rows, cols, kernels::DType::F32, seed, j, j + 1,
                                          dst + (f - r0) * cols);
                      }
                    });
  }
  write_atomically(w, out);
}

}  // namespace sandwich::engine
