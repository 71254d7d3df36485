#pragma once
// Random weights with a real model's shapes ("--load-format dummy", as in vLLM), and the same
// weights written as a GGUF file that llama.cpp loads too, so a peer can run the very same model.
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/model_config.h"
#include "engine/tokenizer.h"
#include "kernels/dtype.h"

namespace sandwich {

// Fills a rows x cols tensor (row-major, elements of `dtype`) with the deterministic values of
// tensor `name`: uniform with variance 1/cols for matrices (activations keep their scale through
// each layer), 1.0 for norm weights. Rows [r0, r1) only, so callers can fill in parallel.
void fill_dummy_tensor(const std::string& name, int64_t rows, int64_t cols, kernels::DType dtype,
                       uint64_t seed, int64_t r0, int64_t r1, void* dst);

// Writes a GGUF v3 file with dummy weights (matrices in `dtype`, norms F32, as llama.cpp's own
// converter does) and the given vocabulary.
void write_dummy_gguf(const ModelConfig& config, kernels::DType dtype, const Vocab& vocab,
                      uint64_t seed, const std::filesystem::path& out);

// The vocabulary a dummy model of this config gets when no tokenizer is given.
Vocab default_dummy_vocab(const ModelConfig& config);

}  // namespace sandwich
