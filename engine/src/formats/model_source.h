#pragma once
// What a weights file offers before packing: the config, named tensors (views into the
// memory-mapped file) and where its tokenizer is. Every format reader produces one.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/layer_range.h"
#include "engine/formats/model_config.h"
#include "engine/text/tokenizer.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

namespace sandwich::engine {

// How q/k rows pair up for RoPE in the file.
enum class RopeLayout {
  Interleaved,  // pairs (2i, 2i+1): GGUF, llama2.c, Meta's checkpoints
  RotateHalf,   // pairs (i, i + d/2): Hugging Face checkpoints
};

struct SourceTensor {
  kernels::DType dtype = kernels::DType::F32;
  std::vector<int64_t> shape;  // outermost first: a matrix is {rows (out), cols (in)}
  const void* data = nullptr;
  // Set for a quantized tensor: data holds its ggml blocks, row after row, and dtype is unused.
  std::optional<kernels::QType> qtype;
  int64_t elements() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// Tensor names follow GGUF: token_embd.weight, blk.N.attn_q.weight, output_norm.weight, ...
struct ModelSource {
  ModelConfig config;
  RopeLayout rope_layout = RopeLayout::Interleaved;
  std::map<std::string, SourceTensor> tensors;
  std::vector<std::shared_ptr<const void>> keep_alive;  // mapped files the tensors point into
  std::string description;                              // e.g. "GGUF v3, 12 tensors BF16"
  std::optional<uint32_t> file_type;  // GGUF general.file_type (llama.cpp's llama_ftype)
  // Tokenizer: a vocabulary carried by the file, or a file/folder to load one from.
  std::optional<Vocab> vocab;
  std::optional<std::filesystem::path> tokenizer_path;
  std::string tokenizer_searched;  // where we looked, for the error if none is found
};

enum class FileFormat { GGUF, SafetensorsFolder, SafetensorsFile, Llama2c, Unknown };
FileFormat detect_format(const std::filesystem::path& path);

// A GGUF's quantized blocks are checked for bad scales (which reads them) only in the tensors a
// stage holding `layers` packs: the rest of the file stays untouched.
ModelSource read_gguf(const std::filesystem::path& path, LayerRange layers = {});
ModelSource read_safetensors(const std::filesystem::path& path);  // folder or single file
ModelSource read_llama2c(const std::filesystem::path& path);
// Whichever of the above the file or folder is.
ModelSource read_model_source(const std::filesystem::path& path);
// Only the config of a file or folder (for dummy weights with a real model's shapes).
ModelConfig read_config_only(const std::filesystem::path& path);

std::string tensor_name(int layer, const char* what);  // "blk.<layer>.<what>.weight"
// The layer of a "blk.<layer>.*" tensor (INT64_MAX past 18 digits), nullopt for the others.
std::optional<int64_t> tensor_layer(const std::string& name);
// Whether a pipeline stage holding `layers` packs tensor `name`: its layers', the
// embedding on the first stage, the final norm and output head on the last (a tied head is the
// embedding).
bool stage_holds_tensor(const std::string& name, LayerRange layers, const ModelConfig& c);

// The storage the loader gives a file's unquantized matrices under --dtype auto, from the element
// types its matrices have: BF16 when any is F16/BF16, else F32 (a quantized file's few F32
// matrices stay F32); BF16 names an all-quantized model.
kernels::DType auto_matrix_storage(bool any_half, bool any_f32, bool any_quantized);

// The element type of a tensor as a file names it: "bf16", "q4_k".
std::string source_type_name(const SourceTensor& t);

// Under an explicit --dtype: quantized tensors are dequantized to `to` (BF16, or F32 for --dtype
// float32), and a note says so; by default the loader keeps them quantized. Only the tensors a
// stage holding `layers` packs: the others stay as they are, unread.
void widen_quantized_tensors(ModelSource& src, kernels::DType to, std::vector<std::string>& notes,
                             LayerRange layers = {});

}  // namespace sandwich::engine
