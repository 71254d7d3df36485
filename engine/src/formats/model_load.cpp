// Turning a model source (or a preset with dummy weights) into a Model: shape checks, dtype
// choice, packing into the shared weight region, tokenizer and RoPE tables.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/json_file.h"
#include "common/paths.h"
#include "engine/formats/dummy_model.h"
#include "engine/formats/model.h"
#include "engine/formats/quantize_model.h"
#include "engine/plans/plan.h"
#include "formats/dummy_tensor.h"
#include "formats/model_source.h"
#include "formats/model_weights.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
using kernels::DType;

ModelConfig read_hf_config(const fs::path& folder);
ModelConfig read_gguf_config(const fs::path& path);

std::string tensor_name(int layer, const char* what) {
  return "blk." + std::to_string(layer) + "." + what + ".weight";
}

std::optional<int64_t> tensor_layer(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  const size_t dot = name.find('.', 4);
  const std::string index = name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return index.size() > 18 ? INT64_MAX : std::stoll(index);
}

bool stage_holds_tensor(const std::string& name, LayerRange layers, const ModelConfig& c) {
  const LayerRange r = resolve_layers(layers, c.n_layers);
  if (const auto l = tensor_layer(name)) return *l >= r.begin && *l < r.end;
  const bool first = r.begin == 0, last = r.end == c.n_layers;
  if (name == "token_embd.weight") return first || (last && c.tied_embeddings);
  if (name == "output.weight" || name == "output_norm.weight") return last;
  return true;
}

std::string source_type_name(const SourceTensor& t) {
  return std::string(t.qtype ? kernels::qtype_info(*t.qtype).name : kernels::dtype_name(t.dtype));
}

namespace {

uint64_t source_bytes(const SourceTensor& t) {
  if (!t.qtype) return static_cast<uint64_t>(t.elements()) * kernels::dtype_size(t.dtype);
  const auto& info = kernels::qtype_info(*t.qtype);
  return static_cast<uint64_t>(t.elements() / info.block_elems * info.block_bytes);
}

}  // namespace

fs::path models_dir() {
  if (const char* env = std::getenv("SANDWICH_MODELS"); env && *env) return env;
  return user_cache_dir() / "models";
}

FileFormat detect_format(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return FileFormat::SafetensorsFolder;
  // Weights are mapped, so they must be a regular file; and opening a FIFO would block.
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw std::runtime_error("model " + path.string() +
                             " is not a regular file (weights are mapped: a GGUF, safetensors or "
                             "llama2.c file, or a Hugging Face folder)");
  std::ifstream in(path, std::ios::binary);
  char head[9] = {};
  in.read(head, 8);
  if (in.gcount() >= 4 && std::string(head, 4) == "GGUF") return FileFormat::GGUF;
  if (path.extension() == ".safetensors") return FileFormat::SafetensorsFile;
  if (path.extension() == ".gguf") return FileFormat::GGUF;  // the reader will say what is wrong
  if (in.gcount() == 8) {
    // safetensors: u64 header length, then '{'.
    char brace = 0;
    in.read(&brace, 1);
    if (brace == '{') return FileFormat::SafetensorsFile;
  }
  if (fs::file_size(path, ec) >= 28) return FileFormat::Llama2c;
  return FileFormat::Unknown;
}

ModelConfig read_config_only(const fs::path& path) {
  if (path.extension() == ".json" && fs::is_regular_file(path)) {
    ModelConfig c =
        config_from_hf_json(read_json_file(path, file_kinds::kModelMetadata), path.string());
    c.name = path.stem().string();
    return c;
  }
  switch (detect_format(path)) {
    case FileFormat::GGUF:
      return read_gguf_config(path);
    case FileFormat::SafetensorsFolder:
      return read_hf_config(path);
    case FileFormat::SafetensorsFile:
      return read_hf_config(path.parent_path());
    case FileFormat::Llama2c:
      return read_llama2c(path).config;
    case FileFormat::Unknown:
      break;
  }
  throw std::runtime_error(path.string() + ": unrecognised model file");
}

ModelConfig read_model_config(const fs::path& path) {
  return read_config_only(path);
}

ModelSource read_model_source(const fs::path& path) {
  switch (detect_format(path)) {
    case FileFormat::GGUF:
      return read_gguf(path);
    case FileFormat::SafetensorsFolder:
    case FileFormat::SafetensorsFile:
      return read_safetensors(path);
    case FileFormat::Llama2c:
      return read_llama2c(path);
    case FileFormat::Unknown:
      break;
  }
  throw std::runtime_error(path.string() +
                           ": unrecognised model file (expected GGUF, safetensors or llama2.c)");
}

ModelFileInfo inspect_model(const fs::path& path) {
  ModelSource src = read_model_source(path);
  ModelFileInfo info;
  info.config = src.config;
  info.description = src.description;
  info.n_tensors = static_cast<int64_t>(src.tensors.size());
  for (auto& [name, t] : src.tensors) {
    const std::string type = source_type_name(t);
    const uint64_t bytes = source_bytes(t);
    ++info.dtypes[type];
    info.bytes += bytes;
    info.tensors.push_back({name, type, t.shape, t.elements(), bytes});
  }
  return info;
}

std::vector<double> rope_inv_freq(const ModelConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<double> f(half);
  for (int i = 0; i < half; ++i)
    f[i] = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.head_dim);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScaling::Type::Linear) {
    for (auto& v : f) v /= s.factor;
  } else if (s.type == RopeScaling::Type::Llama3) {
    // Meta's Llama-3.1 rule: long wavelengths are slowed by `factor`, short ones kept, and the
    // band between interpolated.
    const double low_wavelen = s.original_max_position / s.low_freq_factor;
    const double high_wavelen = s.original_max_position / s.high_freq_factor;
    for (auto& v : f) {
      const double wavelen = 2 * M_PI / v;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        v /= s.factor;
      } else {
        const double smooth = (s.original_max_position / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        v = (1 - smooth) * v / s.factor + smooth * v;
      }
    }
  }
  if (!c.rope_freq_factors.empty())
    for (int i = 0; i < half; ++i) f[i] /= c.rope_freq_factors[i];
  return f;
}

// A tensor of the model as the loader packs it: a matrix (n x k) or a vector (k = 0, f32).
struct PackedTensor {
  std::string name;
  int64_t n = 0, k = 0;
};

// Every tensor of a model of shape `c`, in packing order (a tied head is the embedding, once).
std::vector<PackedTensor> packed_tensors(const ModelConfig& c) {
  std::vector<PackedTensor> t;
  t.push_back({"token_embd.weight", c.vocab_size, c.dim});
  if (!c.tied_embeddings) t.push_back({"output.weight", c.vocab_size, c.dim});
  for (int l = 0; l < c.n_layers; ++l) {
    t.push_back({tensor_name(l, "attn_norm"), c.dim, 0});
    t.push_back({tensor_name(l, "attn_q"), c.q_dim(), c.dim});
    t.push_back({tensor_name(l, "attn_k"), c.kv_dim(), c.dim});
    t.push_back({tensor_name(l, "attn_v"), c.kv_dim(), c.dim});
    t.push_back({tensor_name(l, "attn_output"), c.dim, c.q_dim()});
    t.push_back({tensor_name(l, "ffn_norm"), c.dim, 0});
    t.push_back({tensor_name(l, "ffn_gate"), c.ffn_dim, c.dim});
    t.push_back({tensor_name(l, "ffn_up"), c.ffn_dim, c.dim});
    t.push_back({tensor_name(l, "ffn_down"), c.dim, c.ffn_dim});
  }
  t.push_back({"output_norm.weight", c.dim, 0});
  return t;
}

class ModelBuilder {
 public:
  // `widened`: the source's quantized tensors are dequantized to `storage` (an explicit --dtype);
  // those of layers the stage does not hold keep their blocks in the source, never read.
  ModelBuilder(Model& m, DType storage, bool widened, int threads)
      : m_(m), storage_(storage), widened_(widened), team_(threads) {}

  void build(const ModelSource* src, uint64_t seed, LayerRange layers) {
    const ModelConfig& c = m_.config;
    src_ = src;
    seed_ = seed;
    if (src_) check_layer_count();
    const LayerRange held = resolve_layers(layers, c.n_layers);
    m_.layers_ = held;
    // Sizes first, so the region is one allocation; the storage types of the whole model (a
    // stage's plan identity is the model's).
    size_t bytes = 0;
    for (const PackedTensor& t : packed_tensors(c)) {
      const bool holds = stage_holds_tensor(t.name, held, c);
      if (t.k == 0) {
        if (holds) bytes += t.n * 4 + 64;
        ++whole_counts_["f32"];
        continue;
      }
      kernels::PackedWeight pw = plan(t.name, t.n, t.k, !holds && widened_);
      if (holds) bytes += pw.bytes + 4096;
      const std::string type = type_name(pw);
      ++whole_counts_[type];
      ++matrix_counts_[type];
      matrix_bytes_ += pw.bytes;
      matrix_elements_ += static_cast<double>(t.n) * static_cast<double>(t.k);
    }
    m_.region_ = SharedRegion("sandwich-weights", bytes, SharedRegion::Kind::Fork);

    ModelWeights& w = *m_.weights_;
    w.dtype = storage_;
    const bool first = held.begin == 0, last = held.end == c.n_layers;
    if (first) w.embedding = matrix("token_embd.weight", c.vocab_size, c.dim, false);
    if (last) {
      // A tied head is the embedding matrix: shared where the stage holds both.
      w.output = !c.tied_embeddings ? matrix("output.weight", c.vocab_size, c.dim, false)
                 : first            ? w.embedding
                                    : matrix("token_embd.weight", c.vocab_size, c.dim, false);
      w.final_norm = vector("output_norm.weight", c.dim);
    }
    w.layers.resize(c.n_layers);
    for (int l = held.begin; l < held.end; ++l) {
      LayerWeights& L = w.layers[l];
      L.attn_norm = vector(tensor_name(l, "attn_norm"), c.dim);
      L.wq = matrix(tensor_name(l, "attn_q"), c.q_dim(), c.dim, true);
      L.wk = matrix(tensor_name(l, "attn_k"), c.kv_dim(), c.dim, true);
      L.wv = matrix(tensor_name(l, "attn_v"), c.kv_dim(), c.dim, false);
      L.wo = matrix(tensor_name(l, "attn_output"), c.dim, c.q_dim(), false);
      L.ffn_norm = vector(tensor_name(l, "ffn_norm"), c.dim);
      L.w_gate = matrix(tensor_name(l, "ffn_gate"), c.ffn_dim, c.dim, false);
      L.w_up = matrix(tensor_name(l, "ffn_up"), c.ffn_dim, c.dim, false);
      L.w_down = matrix(tensor_name(l, "ffn_down"), c.dim, c.ffn_dim, false);
    }
  }

  // "q4_k x 193, f32 x 65, q6_k x 33; 4.20 GiB": what the matrices and vectors are stored as,
  // most first.
  std::string summary() const {
    char gib[32];
    std::snprintf(gib, sizeof gib, "; %.2f GiB",
                  static_cast<double>(m_.region_.used()) / (1 << 30));
    return type_counts() + gib;
  }
  // "q4_k x 193, f32 x 65, q6_k x 33": the stage's tensors by type, most first, then by name.
  std::string type_counts() const { return counts_text(type_counts_); }
  // The same of the whole model (a stage's too): what identifies its file to a plan.
  std::string whole_type_counts() const { return counts_text(whole_counts_); }

  static std::string counts_text(const std::map<std::string, int>& counts) {
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [type, n] : counts) by_count.push_back({-n, type});
    std::sort(by_count.begin(), by_count.end());
    std::string s;
    for (const auto& [n, type] : by_count)
      s += (s.empty() ? "" : ", ") + type + " x " + std::to_string(-n);
    return s;
  }
  bool any_quantized() const {
    for (const auto& [type, n] : matrix_counts_)
      if (type != kernels::dtype_name(DType::F32) && type != kernels::dtype_name(DType::BF16))
        return true;
    return false;
  }
  std::string main_matrix_type() const {
    auto most = std::max_element(matrix_counts_.begin(), matrix_counts_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return most == matrix_counts_.end() ? "" : most->first;
  }
  // Packed matrix bytes per matrix element of the whole model: what decode streams per weight.
  double bytes_per_weight() const {
    return matrix_elements_ > 0 ? static_cast<double>(matrix_bytes_) / matrix_elements_ : 0;
  }

 private:
  // Layers the file holds beyond the config's count would be silently dropped: the header is
  // wrong (or the tensors belong to another model), and the output would be garbage.
  void check_layer_count() const {
    const int32_t layers = m_.config.n_layers;
    for (const auto& [name, t] : src_->tensors)
      if (const auto l = tensor_layer(name); l && *l >= layers)
        throw std::runtime_error("tensor " + name.substr(0, name.find('.', 4)) + ".* (" + name +
                                 ") is beyond block_count " + std::to_string(layers) +
                                 " (the config's number of layers)");
  }

  const SourceTensor& find(const std::string& name, std::vector<int64_t> shape) {
    auto it = src_->tensors.find(name);
    if (it == src_->tensors.end()) throw std::runtime_error("tensor '" + name + "' is missing");
    if (it->second.shape != shape) {
      auto str = [](const std::vector<int64_t>& s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
        return r + "]";
      };
      throw std::runtime_error("tensor '" + name + "' has shape " + str(it->second.shape) +
                               ", expected " + str(shape) + " for this model's config");
    }
    return it->second;
  }

  // q/k rows of interleaved files are reordered to the rotate-half layout the kernels use.
  std::vector<int64_t> rope_row_map(int64_t rows) const {
    const int64_t hd = m_.config.head_dim, half = hd / 2;
    std::vector<int64_t> map(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t h = r / hd, j = r % hd;
      map[r] = h * hd + (j < half ? 2 * j : 2 * (j - half) + 1);
    }
    return map;
  }

  // The source's quantized tensors keep their blocks (kernels' quantized panels); the rest are
  // stored as storage_.
  const SourceTensor* quantized(const std::string& name) const {
    if (!src_) return nullptr;
    auto it = src_->tensors.find(name);
    return it != src_->tensors.end() && it->second.qtype ? &it->second : nullptr;
  }

  static std::string type_name(const kernels::PackedWeight& pw) {
    return std::string(pw.qtype ? kernels::qtype_info(*pw.qtype).name
                                : kernels::dtype_name(pw.dtype));
  }

  // `as_storage`: planned as storage_ whatever the source holds (a widened file's tensors the
  // stage does not hold, left quantized).
  kernels::PackedWeight plan(const std::string& name, int64_t n, int64_t k,
                             bool as_storage = false) const {
    if (const SourceTensor* t = as_storage ? nullptr : quantized(name)) {
      try {
        return kernels::plan_packed_weight_quant(n, k, *t->qtype);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error("tensor '" + name + "' (" + source_type_name(*t) +
                                 "): " + e.what());
      }
    }
    return kernels::plan_packed_weight(n, k, storage_);
  }

  kernels::PackedWeight matrix(const std::string& name, int64_t n, int64_t k, bool rope_rows) {
    kernels::PackedWeight pw = plan(name, n, k);
    pw.data = m_.region_.allocate(pw.bytes, 4096);
    ++type_counts_[type_name(pw)];
    if (!src_) {
      // Generated and packed a block of rows at a time, each thread its own block.
      const int64_t block = pw.panel * 16;
      team_.run([&](int tid, int nt) {
        std::vector<uint8_t> tmp(static_cast<size_t>(block * k) * kernels::dtype_size(storage_));
        for (int64_t r0 = block * tid; r0 < n; r0 += block * nt) {
          const int64_t r1 = std::min(n, r0 + block);
          fill_dummy_tensor(name, n, k, storage_, seed_, r0, r1, tmp.data());
          kernels::pack_weight_rows(pw, tmp.data(), storage_, k, r0, r1);
        }
      });
      return pw;
    }
    const SourceTensor& t = find(name, {n, k});
    std::vector<int64_t> map;
    if (rope_rows && src_->rope_layout == RopeLayout::Interleaved) map = rope_row_map(n);
    const int64_t* row_map = map.empty() ? nullptr : map.data();
    if (t.qtype) {
      const auto& info = kernels::qtype_info(*t.qtype);
      kernels::pack_weight_quant(pw, t.data, k / info.block_elems * info.block_bytes, row_map,
                                 &team_);
    } else {
      kernels::pack_weight(pw, t.data, t.dtype, k, row_map, &team_);
    }
    return pw;
  }

  const float* vector(const std::string& name, int64_t n) {
    float* dst = static_cast<float*>(m_.region_.allocate(static_cast<size_t>(n) * 4));
    ++type_counts_["f32"];
    if (!src_) {
      fill_dummy_tensor(name, n, 0, DType::F32, seed_, 0, n, dst);
      return dst;
    }
    const SourceTensor& t = find(name, {n});
    for (int64_t i = 0; i < n; ++i)
      dst[i] = kernels::load_as_f32(t.data, static_cast<size_t>(i), t.dtype);
    return dst;
  }

  Model& m_;
  DType storage_;
  bool widened_;
  kernels::ThreadTeam team_;
  const ModelSource* src_ = nullptr;
  uint64_t seed_ = 0;
  // The stage's tensors by type; the whole model's, and its matrices'.
  std::map<std::string, int> type_counts_, whole_counts_, matrix_counts_;
  size_t matrix_bytes_ = 0;
  double matrix_elements_ = 0;
};

namespace {

// Finds weights for `--model NAME`: a path, or a preset name under models_dir().
std::optional<fs::path> resolve_weights(const std::string& name, std::string* looked) {
  std::error_code ec;
  if (fs::exists(name, ec)) return fs::path(name);
  const fs::path dir = models_dir();
  const fs::path candidates[] = {dir / name, dir / (name + ".gguf")};
  for (const auto& c : candidates) {
    *looked += (looked->empty() ? "" : ", ") + c.string();
    if (fs::is_regular_file(c, ec)) return c;
    if (fs::is_directory(c, ec)) {
      if (fs::exists(c / "config.json")) return c;
      for (auto& e : fs::directory_iterator(c, ec))
        if (e.path().extension() == ".gguf") return e.path();
    }
  }
  return std::nullopt;
}

}  // namespace

DType auto_matrix_storage(bool any_half, bool any_f32, bool any_quantized) {
  if (any_half) return DType::BF16;
  // A quantized file's F32 matrices are the few whose rows no block fits (stories260K's
  // ffn_down): they stay F32, as llama.cpp computes them, since BF16 would add an error as large
  // as Q8_0's. With none, the storage type only names the model (plans, the tuner): BF16.
  return any_quantized && !any_f32 ? DType::BF16 : DType::F32;
}

namespace {

DType choose_storage(const ModelSource* src, WeightDType want, std::vector<std::string>& notes) {
  if (want == WeightDType::F32) return DType::F32;
  if (want == WeightDType::BF16) return DType::BF16;
  if (!src) return DType::BF16;
  bool any_f16 = false, any_bf16 = false, any_f32 = false, any_quantized = false;
  for (auto& [name, t] : src->tensors) {
    if (t.shape.size() != 2) continue;
    any_quantized |= t.qtype.has_value();
    if (t.qtype) continue;
    any_f16 |= t.dtype == DType::F16;
    any_bf16 |= t.dtype == DType::BF16;
    any_f32 |= t.dtype == DType::F32;
  }
  if (any_f16)
    notes.push_back(
        "F16 weights are converted to BF16 (as vLLM does on CPU); pass --dtype float32 to keep "
        "full precision");
  return auto_matrix_storage(any_f16 || any_bf16, any_f32, any_quantized);
}

std::string preset_list() {
  std::string s;
  for (auto& n : preset_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Sets m's shape and source; the tensors of real weights, none for dummy ones.
std::optional<ModelSource> open_source(const LoadOptions& o, const std::optional<fs::path>& path,
                                       const std::string& looked, Model& m) {
  const bool is_preset = !path && fs::exists(configs_dir() / "models" / (o.model + ".json"));
  if (o.load_format == LoadFormat::Dummy) {
    if (path) {
      m.config = read_config_only(*path);
      m.source = "dummy weights with the shapes of " + path->string();
    } else if (is_preset) {
      m.config = load_preset(o.model);
      m.source = "dummy weights with the shapes of preset " + o.model;
    } else {
      throw std::runtime_error("model '" + o.model +
                               "' is neither a file or folder nor a known preset (" +
                               preset_list() + ")");
    }
    return std::nullopt;
  }
  if (!path) {
    if (is_preset)
      throw std::runtime_error(
          "no weights found for preset '" + o.model + "' (looked in " + looked +
          "); put a GGUF file or Hugging Face folder there (or set SANDWICH_MODELS), "
          "or run with --load-format dummy for random weights with its shapes");
    throw std::runtime_error("model '" + o.model +
                             "' not found: no such file or folder, and it is not a preset name");
  }
  std::optional<ModelSource> src;
  switch (detect_format(*path)) {
    case FileFormat::GGUF:
      src = read_gguf(*path, o.layers);
      break;
    case FileFormat::SafetensorsFolder:
    case FileFormat::SafetensorsFile:
      src = read_safetensors(*path);
      break;
    case FileFormat::Llama2c:
      src = read_llama2c(*path);
      break;
    case FileFormat::Unknown:
      throw std::runtime_error(
          path->string() + ": unrecognised model file (expected GGUF, safetensors or llama2.c)");
  }
  m.config = src->config;
  m.source = path->string() + " (" + src->description + ")";
  // Quantized matrices stay quantized; an explicit --dtype widens them (a logged fallback), those
  // of the stage's layers only.
  if (o.dtype != WeightDType::Auto)
    widen_quantized_tensors(*src, o.dtype == WeightDType::F32 ? DType::F32 : DType::BF16, m.notes,
                            o.layers);
  return src;
}

// Packs the weights (src's, or dummy ones when it is null) and records their storage types.
// `where` (the file, else the model's name) prefixes a packing error.
void build_weights(Model& m, const ModelSource* src, DType storage, const LoadOptions& o,
                   int threads, const std::string& where) {
  ModelBuilder b(m, storage, src && o.dtype != WeightDType::Auto, threads);
  try {
    b.build(src, o.seed, o.layers);
    m.weight_types = b.summary();
    m.bytes_per_weight = b.bytes_per_weight();
    m.main_weight_type = b.main_matrix_type();
    if (b.any_quantized()) {
      m.weight_storage = b.whole_type_counts();
      const auto preset =
          src && src->file_type ? quant_preset_of_file_type(*src->file_type) : std::nullopt;
      m.weight_storage_name = preset ? *preset : m.main_weight_type;
    } else {
      m.weight_storage = m.weight_storage_name = std::string(weight_dtype_name(m.weight_dtype()));
    }
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
}

// Tokenizer: explicit, else the model's own, else (dummy only) a synthetic one.
void attach_tokenizer(Model& m, const LoadOptions& o, const std::optional<fs::path>& path,
                      const ModelSource* src) {
  if (o.tokenizer) {
    m.tokenizer = load_tokenizer(*o.tokenizer);
  } else if (src && src->vocab) {
    m.tokenizer = make_tokenizer(*src->vocab);
  } else if (src && src->tokenizer_path) {
    m.tokenizer = load_tokenizer(*src->tokenizer_path);
  } else if (!src) {
    if (path) {
      // Dummy weights for a real file: use its tokenizer when it has one.
      try {
        ModelSource real =
            detect_format(*path) == FileFormat::GGUF ? read_gguf(*path) : ModelSource{};
        if (real.vocab) m.tokenizer = make_tokenizer(*real.vocab);
      } catch (const std::exception&) {
      }
    }
    if (!m.tokenizer) {
      m.tokenizer = make_tokenizer(default_dummy_vocab(m.config));
      m.notes.push_back("no tokenizer given: using a synthetic vocabulary of " +
                        std::to_string(m.config.vocab_size) +
                        " tokens (pass --tokenizer for a real one)");
    }
  } else if (o.require_tokenizer) {
    throw std::runtime_error("no tokenizer found for " + path->string() + " (looked in " +
                             src->tokenizer_searched + "); pass --tokenizer FILE");
  }
  if (m.tokenizer) {
    if (m.tokenizer->vocab_size() > m.config.vocab_size)
      throw std::runtime_error("the tokenizer has " + std::to_string(m.tokenizer->vocab_size()) +
                               " tokens but the model's vocabulary has only " +
                               std::to_string(m.config.vocab_size));
    if (m.config.bos_id < 0) m.config.bos_id = m.tokenizer->bos_id();
    if (m.config.eos_id < 0) m.config.eos_id = m.tokenizer->eos_id();
  }
}

// RoPE tables for every position (angles in double: positions reach 1e5+).
void fill_rope_tables(Model& m) {
  const ModelConfig& c = m.config;
  const auto inv = rope_inv_freq(c);
  const int half = c.head_dim / 2;
  m.rope_cos.resize(static_cast<size_t>(c.max_seq_len) * half);
  m.rope_sin.resize(m.rope_cos.size());
  for (int p = 0; p < c.max_seq_len; ++p)
    for (int i = 0; i < half; ++i) {
      const double a = p * inv[i];
      m.rope_cos[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(a));
      m.rope_sin[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(a));
    }
}

}  // namespace

std::unique_ptr<Model> load_model(const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.model.empty())
    throw std::runtime_error("no model given (--model PATH or preset name)");
  // Before any file is read: a bad count should not wait for a large model to load.
  const int threads = resolve_threads(options.threads, "the thread count");
  auto m = std::make_unique<Model>();
  std::string looked;
  const std::optional<fs::path> path = resolve_weights(options.model, &looked);
  LoadOptions o = options;
  if (o.choose_layers) {
    // The shape from the headers (or the preset) alone, before any tensor is read.
    const bool is_preset = !path && fs::exists(configs_dir() / "models" / (o.model + ".json"));
    if (path || is_preset)
      o.layers = o.choose_layers(path ? read_config_only(*path) : load_preset(o.model));
  }
  std::optional<ModelSource> src = open_source(o, path, looked, *m);
  const ModelSource* source = src ? &*src : nullptr;
  const DType storage = choose_storage(source, o.dtype, m->notes);
  build_weights(*m, source, storage, o, threads, path ? path->string() : o.model);
  attach_tokenizer(*m, o, path, source);
  fill_rope_tables(*m);
  m->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace sandwich::engine
