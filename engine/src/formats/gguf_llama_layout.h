#pragma once
// How a Llama model is laid out in a GGUF file: its tensors, its metadata, and the interleaved
// RoPE row order of attn_q/attn_k (our kernels use rotate-half order).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/formats/model_config.h"
#include "engine/text/tokenizer.h"

namespace sandwich::engine {

struct LlamaTensorSpec {
  std::string name;
  int64_t rows = 0;
  int64_t cols = 0;  // 0 for a vector of `rows` values
  bool rope_rows = false;
};
// In the order llama.cpp's converter writes them; output.weight only when not tied.
std::vector<LlamaTensorSpec> llama_tensor_specs(const ModelConfig& c);

// general.* and llama.* keys for the config, and the vocabulary.
void set_llama_metadata(const ModelConfig& c, const Vocab& vocab, uint32_t file_type,
                        gguf::Writer& w);

// The file row (interleaved pairs) holding rotate-half row j, and back.
int64_t interleaved_row(int64_t j, int64_t head_dim);
int64_t rotate_half_row(int64_t file_row, int64_t head_dim);

}  // namespace sandwich::engine
