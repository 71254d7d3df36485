#pragma once
// Quantized GGUF files as llama.cpp writes them: its presets (q4_k_m, q8_0, ...), each mixing
// block types per tensor by llama.cpp's rules, so llama.cpp reads our files and we read its.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/model_config.h"

namespace sandwich::engine {

struct QuantPreset {
  std::string name;    // "q4_k_m"
  uint32_t base_type;  // ggml type of most matrices
  uint32_t file_type;  // llama.cpp's general.file_type (llama_ftype)
  bool pure = false;   // every quantized tensor in base_type (no per-tensor mixing)
};

// Case-insensitive; nullopt for a name that is not a preset.
std::optional<QuantPreset> quant_preset(std::string_view name);
std::string quant_preset_names();  // "q8_0, q4_0, ..." for messages
// The preset a GGUF general.file_type names ("q4_k_m" for 15, as llama.cpp calls it; a pure
// q4_k file carries the same id), nullopt for an unquantized or unknown id.
std::optional<std::string> quant_preset_of_file_type(uint32_t file_type);
// The unquantized types `quantize` writes too: f32, f16, bf16 (as llama-quantize's F32, F16 and
// BF16: every matrix in that type, vectors f32). Case-insensitive; nullopt for another name.
std::optional<QuantPreset> plain_preset(std::string_view name);

// The ggml type the preset gives a tensor: llama.cpp's choice for Llama models (more bits for
// output.weight and for attn_v/ffn_down in some layers; F32 for vectors and norms; fallbacks
// for rows that are not whole blocks: llama.cpp's for the k-quants, F32 for the others, where
// llama-quantize gives up). Throws if no type fits the row length.
uint32_t preset_tensor_type(const QuantPreset& preset, const std::string& name, int64_t row_len,
                            int ndims, const ModelConfig& config, bool has_output);

// Writes the model at `in` (any file or folder the loader reads) as a GGUF quantized with the
// preset; then prints one line per tensor to `log`. Throws with a message naming the tensor on
// weights a type cannot hold (non-finite values, or beyond its f16 scales).
// `tokenizer` gives the vocabulary of a folder or llama2.c file without one of its own (a GGUF
// input keeps its own). `threads`: how many quantize at once (0: every core).
void quantize_model_file(const std::filesystem::path& in, const std::filesystem::path& out,
                         const QuantPreset& preset, std::ostream* log,
                         const std::optional<std::filesystem::path>& tokenizer = std::nullopt,
                         int threads = 0);

}  // namespace sandwich::engine
