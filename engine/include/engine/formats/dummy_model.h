#pragma once
// Random weights with a real model's shapes ("--load-format dummy", as in vLLM), and the same
// weights written as a GGUF file that llama.cpp loads too, so a peer can run the very same model.
#include <cstdint>
#include <filesystem>

#include "engine/formats/model.h"
#include "engine/formats/model_config.h"
#include "engine/formats/quantize_model.h"
#include "engine/text/tokenizer.h"

namespace sandwich::engine {

// Writes a GGUF v3 file with dummy weights (matrices in `dtype`, BF16 for Auto as when loading
// with --load-format dummy; norms F32, as llama.cpp's own converter does) and the given
// vocabulary. Loading it gives the weights --load-format dummy gives for the same seed.
void write_dummy_gguf(const ModelConfig& config, WeightDType dtype, const Vocab& vocab,
                      uint64_t seed, const std::filesystem::path& out);

// The same weights quantized with a llama.cpp preset (q4_k_m, q8_0, ...).
void write_dummy_gguf_quantized(const ModelConfig& config, const QuantPreset& preset,
                                const Vocab& vocab, uint64_t seed,
                                const std::filesystem::path& out);

// The vocabulary a dummy model of this config gets when no tokenizer is given.
Vocab default_dummy_vocab(const ModelConfig& config);
// A real vocabulary smaller than the config's embedding (padded vocabularies) gets unused filler
// tokens up to its vocab_size. Throws std::invalid_argument for one larger than that.
void pad_dummy_vocab(Vocab& vocab, const ModelConfig& config);

}  // namespace sandwich::engine
