#include "formats/gguf_llama_layout.h"

#include "formats/model_source.h"

namespace sandwich::engine {

std::vector<LlamaTensorSpec> llama_tensor_specs(const ModelConfig& c) {
  std::vector<LlamaTensorSpec> s;
  s.push_back({"token_embd.weight", c.vocab_size, c.dim});
  for (int l = 0; l < c.n_layers; ++l) {
    s.push_back({tensor_name(l, "attn_norm"), c.dim, 0});
    s.push_back({tensor_name(l, "attn_q"), c.q_dim(), c.dim, true});
    s.push_back({tensor_name(l, "attn_k"), c.kv_dim(), c.dim, true});
    s.push_back({tensor_name(l, "attn_v"), c.kv_dim(), c.dim});
    s.push_back({tensor_name(l, "attn_output"), c.dim, c.q_dim()});
    s.push_back({tensor_name(l, "ffn_norm"), c.dim, 0});
    s.push_back({tensor_name(l, "ffn_gate"), c.ffn_dim, c.dim});
    s.push_back({tensor_name(l, "ffn_up"), c.ffn_dim, c.dim});
    s.push_back({tensor_name(l, "ffn_down"), c.dim, c.ffn_dim});
  }
  s.push_back({"output_norm.weight", c.dim, 0});
  if (!c.tied_embeddings) s.push_back({"output.weight", c.vocab_size, c.dim});
  return s;
}

void set_llama_metadata(const ModelConfig& c, const Vocab& vocab, uint32_t file_type,
                        gguf::Writer& w) {
  using gguf::Value;
  auto u32 = [](int32_t v) { return Value::of_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", Value::of_string("llama"));
  w.set("general.name", Value::of_string(c.name.empty() ? "sandwich-dummy" : c.name));
  w.set("general.file_type", Value::of_u32(file_type));
  w.set("llama.context_length", u32(c.max_seq_len));
  w.set("llama.embedding_length", u32(c.dim));
  w.set("llama.block_count", u32(c.n_layers));
  w.set("llama.feed_forward_length", u32(c.ffn_dim));
  w.set("llama.rope.dimension_count", u32(c.head_dim));
  w.set("llama.attention.head_count", u32(c.n_heads));
  w.set("llama.attention.head_count_kv", u32(c.n_kv_heads));
  w.set("llama.attention.layer_norm_rms_epsilon", Value::of_f32(c.norm_eps));
  w.set("llama.rope.freq_base", Value::of_f32(c.rope_theta));
  w.set("llama.vocab_size", u32(c.vocab_size));
  vocab_to_gguf(vocab, w);
}

int64_t interleaved_row(int64_t j, int64_t hd) {
  const int64_t half = hd / 2, p = j % hd;
  return j / hd * hd + (p < half ? 2 * p : 2 * (p - half) + 1);
}

int64_t rotate_half_row(int64_t f, int64_t hd) {
  const int64_t p = f % hd;
  return f / hd * hd + (p % 2 == 0 ? p / 2 : hd / 2 + p / 2);
}

}  // namespace sandwich::engine
