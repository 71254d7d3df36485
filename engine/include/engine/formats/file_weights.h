#pragma once
// What a model file's matrices cost to stream, from its header alone (nothing loaded): the
// simulator's memory time for a quantized file, where BF16 bytes would overstate it ~3.5x.
#include <filesystem>
#include <optional>

namespace sandwich::engine {

struct FileWeights {
  bool quantized = false;       // some matrices are quantized blocks (the loader keeps them so)
  double bytes_per_weight = 0;  // matrix bytes per matrix element as the loader stores them
};

// For a GGUF file; std::nullopt for anything else (a preset, a config.json, safetensors,
// llama2.c: their matrices take --dtype's size). Throws std::runtime_error on a bad header.
std::optional<FileWeights> file_weights(const std::filesystem::path& model);

}  // namespace sandwich::engine
