// llama2.c checkpoints (the "legacy" export: 7 int32 header, then fp32 tensors).
#include <cstring>
#include <stdexcept>

#include "engine/formats/mapped_file.h"
#include "formats/model_source.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
namespace {

struct Header {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": llama2.c export versions 1 and 2

}  // namespace

ModelSource read_llama2c(const fs::path& path) {
  auto map = std::make_shared<MappedFile>(path);
  const std::string where = path.string();
  if (map->size() < sizeof(Header))
    throw std::runtime_error(where + ": too small to be a llama2.c checkpoint");
  uint32_t magic;
  std::memcpy(&magic, map->data(), 4);
  if (magic == kVersionedMagic)
    throw std::runtime_error(where +
                             ": llama2.c version-1/2 exports are not supported; export with "
                             "--version 0 (legacy fp32) or convert to GGUF");
  Header h;
  std::memcpy(&h, map->data(), sizeof h);
  const bool shared = h.vocab_size > 0;
  const int64_t vocab = h.vocab_size < 0 ? -int64_t{h.vocab_size} : h.vocab_size;
  if (h.dim <= 0 || h.hidden_dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 || h.n_kv_heads <= 0 ||
      vocab == 0 || h.seq_len <= 0 || h.dim % h.n_heads != 0 || h.dim > (1 << 16) ||
      h.hidden_dim > (1 << 18) || h.n_layers > 1024 || vocab > (1 << 22) || h.seq_len > (1 << 22))
    throw std::runtime_error(where + ": not a llama2.c checkpoint (implausible header)");

  ModelSource src;
  ModelConfig& c = src.config;
  c.name = path.stem().string();
  c.dim = h.dim;
  c.ffn_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.vocab_size = static_cast<int32_t>(vocab);
  c.max_seq_len = h.seq_len;
  c.head_dim = h.dim / h.n_heads;
  c.norm_eps = 1e-5f;  // run.c hard-codes these two
  c.rope_theta = 10000.0f;
  c.tied_embeddings = shared;
  c.bos_id = 1;
  c.eos_id = 2;
  c.validate();

  const int64_t dim = c.dim, hid = c.ffn_dim, L = c.n_layers, kv = c.kv_dim(), q = c.q_dim();
  const int64_t freq = int64_t{c.max_seq_len} * c.head_dim / 2;
  const int64_t base_floats = vocab * dim + L * dim + L * dim * q + 2 * L * dim * kv + L * q * dim +
                              L * dim + 3 * L * dim * hid + dim + 2 * freq;
  const int64_t expected =
      static_cast<int64_t>(sizeof(Header)) + 4 * (base_floats + (shared ? 0 : vocab * dim));
  if (static_cast<int64_t>(map->size()) != expected)
    throw std::runtime_error(
        where + ": " + (static_cast<int64_t>(map->size()) < expected ? "truncated" : "corrupt") +
        " llama2.c checkpoint: " + std::to_string(map->size()) + " bytes, the header implies " +
        std::to_string(expected));

  const float* p = reinterpret_cast<const float*>(map->data() + sizeof(Header));
  auto take = [&](int64_t rows, int64_t cols) {
    SourceTensor t;
    t.dtype = kernels::DType::F32;
    t.shape = cols ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
    t.data = p;
    p += rows * (cols ? cols : 1);
    return t;
  };
  // Per-layer tensors are stacked [layer][...] in this order.
  auto per_layer = [&](const char* what, int64_t rows, int64_t cols) {
    for (int l = 0; l < c.n_layers; ++l) src.tensors[tensor_name(l, what)] = take(rows, cols);
  };
  src.tensors["token_embd.weight"] = take(vocab, dim);
  per_layer("attn_norm", dim, 0);
  per_layer("attn_q", q, dim);
  per_layer("attn_k", kv, dim);
  per_layer("attn_v", kv, dim);
  per_layer("attn_output", dim, q);
  per_layer("ffn_norm", dim, 0);
  per_layer("ffn_gate", hid, dim);
  per_layer("ffn_down", dim, hid);
  per_layer("ffn_up", hid, dim);
  src.tensors["output_norm.weight"] = take(dim, 0);
  p += 2 * freq;  // precomputed RoPE tables, unused
  if (!shared) src.tensors["output.weight"] = take(vocab, dim);

  src.rope_layout = RopeLayout::Interleaved;
  src.description = "llama2.c checkpoint (fp32)";
  // llama2.c keeps its tokenizer in a separate file, by convention tokenizer.bin beside the model.
  const fs::path sibling = path.parent_path() / "tokenizer.bin";
  if (fs::exists(sibling)) src.tokenizer_path = sibling;
  src.tokenizer_searched = sibling.string();
  src.keep_alive.push_back(map);
  return src;
}

}  // namespace sandwich::engine
