#pragma once
// A loaded model: its shape, its weights packed in shared memory, its tokenizer.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "engine/formats/layer_range.h"
#include "engine/formats/model_config.h"
#include "engine/runtime/shared_region.h"
#include "engine/text/tokenizer.h"

namespace sandwich::engine {

struct ModelWeights;  // the packed matrices, private to engine/
class PlacedWeights;  // their copies on NUMA nodes for rank groups, private to engine/

enum class LoadFormat { Auto, Dummy };
inline constexpr EnumName<LoadFormat> kLoadFormatNames[] = {{LoadFormat::Auto, "auto"},
                                                            {LoadFormat::Dummy, "dummy"}};
enum class WeightDType { Auto, F32, BF16 };
// Printed as auto, f32, bf16; vLLM's and PyTorch's names are taken too.
inline constexpr EnumName<WeightDType> kWeightDTypeNames[] = {
    {WeightDType::Auto, "auto"}, {WeightDType::F32, "f32"},   {WeightDType::F32, "float32"},
    {WeightDType::F32, "float"}, {WeightDType::BF16, "bf16"}, {WeightDType::BF16, "bfloat16"}};
inline std::string_view weight_dtype_name(WeightDType t) {
  return name_of(t, kWeightDTypeNames);
}

struct LoadOptions {
  // A path (GGUF file, Hugging Face folder, llama2.c .bin) or a preset name resolved under
  // $SANDWICH_MODELS (default ~/.cache/sandwich/models).
  std::string model;
  std::optional<std::filesystem::path> tokenizer;  // overrides the model's own
  LoadFormat load_format = LoadFormat::Auto;
  // Auto keeps F32 and BF16 as they are and turns F16 into BF16 (as vLLM does on CPU); dummy
  // models default to BF16.
  WeightDType dtype = WeightDType::Auto;
  int threads = 0;    // for packing; 0 = all available cores
  uint64_t seed = 0;  // dummy weights
  bool require_tokenizer = true;
  // A pipeline stage's share: only these layers' tensors (and the embedding or the head where
  // the stage holds layer 0 or the last) are read from the file and packed.
  LayerRange layers;
  // Or chooses them from the model's shape once it is known (a pipeline node's share).
  std::function<LayerRange(const ModelConfig&)> choose_layers;
};

class Model {
 public:
  Model();
  ~Model();

  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;  // null only if require_tokenizer was false
  std::string source;                    // what was loaded, for messages
  std::vector<std::string> notes;        // things a user should know (conversions, fallbacks)
  double load_seconds = 0;
  // What the weights are stored as, for the start-up line: "q4_k x 193, q6_k x 33, f32 x 65;
  // 4.20 GiB" (quantized matrices keep their GGUF blocks).
  std::string weight_types;
  // The matrices' most common type: "q4_k", "bf16" (benchmark tables' dtype column).
  std::string main_weight_type;
  // The weights' storage, precisely enough to tell a plan made for one file of a model from
  // another file of the same shapes (ModelIdentity::weights): "bf16" or "f32" when no matrix is
  // quantized, else the tensors counted by type, "q4_k x 73, f32 x 25, q6_k x 13" (the same for
  // every file of one preset mix, whoever quantized it). And its name for messages: "q4_k_m" (the
  // preset a GGUF's general.file_type names), else main_weight_type.
  std::string weight_storage, weight_storage_name;
  // Packed matrix bytes per matrix element (0.56 for Q4_K_M, 2 for BF16): what the planner's
  // bandwidth terms read per weight.
  double bytes_per_weight = 0;
  // cos/sin of every position for the rotate-half RoPE: [max_seq_len][head_dim / 2] each.
  std::vector<float> rope_cos, rope_sin;

  // How the unquantized matrices are stored: F32 or BF16.
  WeightDType weight_dtype() const;
  // The stage's share where only a range of layers was loaded.
  size_t weight_bytes() const { return region_.used(); }
  // Weight bytes one decode step reads: every layer's matrices and norms, the final norm, the
  // output head and one embedding row (the rest of an untied embedding stays untouched); of a
  // stage, only what it holds.
  size_t decode_read_bytes() const;

  // The layers loaded (LoadOptions::layers), resolved: end is never -1.
  LayerRange layers() const;
  bool has_embedding() const { return layers().begin == 0; }
  bool has_head() const { return layers().end == config.n_layers; }
  bool whole() const { return has_embedding() && has_head(); }
  // "layers 0-10 of 22 + embedding", "layers 11-21 of 22 + head", "all 22 layers": for
  // start-up lines.
  std::string layers_text() const;
  const SharedRegion& region() const { return region_; }
  // For the engine's forward passes (model_weights.h).
  const ModelWeights& weights() const { return *weights_; }
  // For the engine's rank groups (placed_weights.h): placed once, shared by every executor.
  PlacedWeights& placed_weights() const { return *placed_; }

 private:
  friend class ModelBuilder;
  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<PlacedWeights> placed_;
  SharedRegion region_;
  LayerRange layers_;  // as given; layers() resolves it
};

// What a model file holds, read from its headers without loading the weights.
struct TensorSummary {
  std::string name;
  std::string type;            // "bf16", "q4_k"
  std::vector<int64_t> shape;  // outermost first
  int64_t elements = 0;
  uint64_t bytes = 0;
};
struct ModelFileInfo {
  ModelConfig config;
  std::string description;  // format and tensor summary
  int64_t n_tensors = 0;
  std::map<std::string, int64_t> dtypes;  // tensor count per element type
  uint64_t bytes = 0;                     // tensor data
  std::vector<TensorSummary> tensors;     // by name
};
ModelFileInfo inspect_model(const std::filesystem::path& path);
// Only the shape of a model file or folder (a folder may hold just config.json).
ModelConfig read_model_config(const std::filesystem::path& path);

// Loads a model; throws std::runtime_error with a message a user can act on.
std::unique_ptr<Model> load_model(const LoadOptions& options);

// Where `--model NAME` looks for weights of a preset name.
std::filesystem::path models_dir();

// RoPE inverse frequencies (head_dim / 2 values) with any scaling applied.
std::vector<double> rope_inv_freq(const ModelConfig& c);

}  // namespace sandwich::engine
