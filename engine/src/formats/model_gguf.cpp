// Llama models in GGUF files.
#include <climits>
#include <stdexcept>

#include "engine/formats/gguf.h"
#include "formats/model_source.h"
#include "kernels/quant_validate.h"

namespace sandwich::engine {
namespace {

std::string supported_types() {
  std::string s = "f32, f16, bf16";
  for (auto t : {kernels::QType::Q4_0, kernels::QType::Q4_1, kernels::QType::Q5_0,
                 kernels::QType::Q5_1, kernels::QType::Q8_0, kernels::QType::Q4_K,
                 kernels::QType::Q5_K, kernels::QType::Q6_K, kernels::QType::Q8_K})
    s += ", " + std::string(kernels::qtype_info(t).name);
  return s;
}

// The tensor's element type, its blocks checked (where check_blocks). The reader has made sure the
// data is there and is whole blocks in all; left are rows that would cut a block and scales a
// kernel would turn into NaN.
void describe_type(const gguf::TensorInfo& t, const std::string& file, bool check_blocks,
                   SourceTensor& st) {
  switch (t.type) {
    case 0:
      st.dtype = kernels::DType::F32;
      return;
    case 1:
      st.dtype = kernels::DType::F16;
      return;
    case 30:
      st.dtype = kernels::DType::BF16;
      return;
  }
  const auto q = kernels::qtype_from_ggml(t.type);
  if (!q)
    throw std::runtime_error(
        file + ": tensor '" + t.name + "' is " + gguf::tensor_type_name(t.type) +
        ", which sandwich does not support (supported: " + supported_types() + ")");
  const auto& info = kernels::qtype_info(*q);
  if (t.dims[0] % static_cast<uint64_t>(info.block_elems) != 0)
    throw std::runtime_error(file + ": tensor '" + t.name + "' (" + std::string(info.name) +
                             ") has rows of " + std::to_string(t.dims[0]) +
                             " values, not a multiple of its " + std::to_string(info.block_elems) +
                             "-value blocks");
  st.qtype = q;
  if (!check_blocks) return;  // a pipeline stage's other layers: never read
  const int64_t blocks = static_cast<int64_t>(t.nbytes) / info.block_bytes;
  if (const int64_t bad = kernels::find_nonfinite_scale(*q, t.data, blocks); bad >= 0)
    throw std::runtime_error(file + ": tensor '" + t.name + "' (" + std::string(info.name) +
                             ") has a NaN or infinite scale in block " + std::to_string(bad) +
                             " of " + std::to_string(blocks));
}

ModelConfig config_from_gguf(const gguf::Reader& r) {
  const std::string file = r.path().string();
  const std::string arch = r.get_string("general.architecture", "");
  if (arch.empty()) throw std::runtime_error(file + ": no general.architecture in the GGUF header");
  if (arch != "llama")
    throw std::runtime_error(file + ": unsupported architecture '" + arch +
                             "' (Sandwich runs Llama-family models: general.architecture = llama)");
  auto key = [&](const char* k) { return arch + "." + k; };
  // Checked before narrowing: embedding_length 2^32 + 64 must not load as a 64-wide model.
  auto narrow = [&](int64_t v, const std::string& k) {
    if (v < INT32_MIN || v > INT32_MAX)
      throw std::runtime_error(file + ": " + k + " = " + std::to_string(v) + " is out of range");
    return static_cast<int32_t>(v);
  };
  auto int_key = [&](const char* k) { return narrow(r.get_int(key(k)), key(k)); };
  auto int_key_or = [&](const char* k, int64_t def) {
    return narrow(r.get_int(key(k), def), key(k));
  };
  ModelConfig c;
  c.name = r.get_string("general.name", r.path().stem().string());
  c.dim = int_key("embedding_length");
  c.n_layers = int_key("block_count");
  c.n_heads = int_key("attention.head_count");
  c.n_kv_heads = int_key_or("attention.head_count_kv", c.n_heads);
  c.ffn_dim = int_key("feed_forward_length");
  c.max_seq_len = int_key_or("context_length", 2048);
  c.head_dim = c.n_heads > 0 ? int_key_or("attention.key_length", c.dim / c.n_heads) : 0;
  c.norm_eps = static_cast<float>(r.get_float(key("attention.layer_norm_rms_epsilon"), 1e-5));
  c.rope_theta = static_cast<float>(r.get_float(key("rope.freq_base"), 10000.0));
  const std::string scaling = r.get_string(key("rope.scaling.type"), "none");
  if (scaling == "linear") {
    c.rope_scaling.type = RopeScaling::Type::Linear;
    c.rope_scaling.factor = static_cast<float>(r.get_float(key("rope.scaling.factor"), 1.0));
  } else if (scaling != "none") {
    throw std::runtime_error(file + ": unsupported rope scaling '" + scaling + "'");
  }
  int64_t vocab = r.get_int(key("vocab_size"), -1);
  if (vocab < 0 && r.has("tokenizer.ggml.tokens"))
    vocab = static_cast<int64_t>(r.get_strings("tokenizer.ggml.tokens").size());
  if (vocab < 0) {
    if (auto* t = r.find_tensor("token_embd.weight"); t && t->dims.size() == 2)
      vocab = static_cast<int64_t>(t->dims[1]);
  }
  c.vocab_size = narrow(vocab, key("vocab_size"));
  c.tied_embeddings = r.find_tensor("output.weight") == nullptr;
  c.bos_id = narrow(r.get_int("tokenizer.ggml.bos_token_id", -1), "tokenizer.ggml.bos_token_id");
  c.eos_id = narrow(r.get_int("tokenizer.ggml.eos_token_id", -1), "tokenizer.ggml.eos_token_id");
  if (auto* rf = r.find_tensor("rope_freqs.weight")) {
    if (rf->type != 0 || c.head_dim <= 0 || rf->elements() != static_cast<uint64_t>(c.head_dim / 2))
      throw std::runtime_error(file + ": rope_freqs.weight must be F32 with head_dim/2 values");
    const float* f = reinterpret_cast<const float*>(rf->data);
    c.rope_freq_factors.assign(f, f + rf->elements());
  }
  c.validate(file);
  return c;
}

}  // namespace

ModelSource read_gguf(const std::filesystem::path& path, LayerRange layers) {
  auto reader = std::make_shared<gguf::Reader>(path);
  const std::string file = path.string();
  ModelSource src;
  src.config = config_from_gguf(*reader);
  const LayerRange held = resolve_layers(layers, src.config.n_layers);
  src.rope_layout = RopeLayout::Interleaved;
  std::map<std::string, int> dtype_counts;
  for (const auto& t : reader->tensors()) {
    if (t.name == "rope_freqs.weight") continue;
    SourceTensor st;
    describe_type(t, file, stage_holds_tensor(t.name, held, src.config), st);
    for (auto it = t.dims.rbegin(); it != t.dims.rend(); ++it)
      st.shape.push_back(static_cast<int64_t>(*it));
    st.data = t.data;
    src.tensors[t.name] = st;
    ++dtype_counts[source_type_name(st)];
  }
  src.description = "GGUF v" + std::to_string(reader->version()) + ", " +
                    std::to_string(reader->tensors().size()) + " tensors";
  for (auto& [name, n] : dtype_counts) src.description += ", " + std::to_string(n) + " " + name;
  if (reader->has("general.file_type")) {
    const int64_t ft = reader->get_int("general.file_type", -1);
    if (ft >= 0 && ft <= UINT32_MAX) src.file_type = static_cast<uint32_t>(ft);
  }
  if (reader->has("tokenizer.ggml.tokens")) src.vocab = vocab_from_gguf(*reader);
  src.tokenizer_searched = file + " (tokenizer.ggml.* metadata)";
  src.keep_alive.push_back(reader);
  return src;
}

ModelConfig read_gguf_config(const std::filesystem::path& path) {
  gguf::Reader r(path);
  return config_from_gguf(r);
}

}  // namespace sandwich::engine
