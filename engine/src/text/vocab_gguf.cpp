// Vocabularies in GGUF metadata (tokenizer.ggml.*), read and written as llama.cpp does.
#include <stdexcept>

#include "engine/formats/gguf.h"
#include "engine/text/tokenizer.h"

namespace sandwich::engine {

Vocab vocab_from_gguf(const gguf::Reader& r) {
  const std::string where = r.path().string();
  const std::string model = r.get_string("tokenizer.ggml.model", "");
  Vocab v;
  if (model == "llama")
    v.kind = Vocab::Kind::SentencePiece;
  else if (model == "gpt2")
    v.kind = Vocab::Kind::ByteLevelBPE;
  else if (model.empty())
    throw std::runtime_error(where +
                             ": no tokenizer in this GGUF (tokenizer.ggml.model is missing)");
  else
    throw std::runtime_error(where + ": unsupported tokenizer model '" + model +
                             "' (supported: llama, gpt2)");
  v.tokens = r.get_strings("tokenizer.ggml.tokens");
  const size_t n = v.tokens.size();
  if (n == 0) throw std::runtime_error(where + ": tokenizer.ggml.tokens is empty");
  if (r.has("tokenizer.ggml.scores")) {
    const auto& s = r.get_numbers("tokenizer.ggml.scores");
    if (s.size() != n)
      throw std::runtime_error(where + ": tokenizer.ggml.scores has " + std::to_string(s.size()) +
                               " entries for " + std::to_string(n) + " tokens");
    v.scores.assign(s.begin(), s.end());
  }
  if (r.has("tokenizer.ggml.token_type")) {
    const auto& t = r.get_numbers("tokenizer.ggml.token_type");
    if (t.size() != n)
      throw std::runtime_error(where +
                               ": tokenizer.ggml.token_type does not match the token count");
    for (double d : t) v.types.push_back(static_cast<TokenType>(static_cast<int32_t>(d)));
  }
  if (r.has("tokenizer.ggml.merges")) v.merges = r.get_strings("tokenizer.ggml.merges");
  v.pre = r.get_string("tokenizer.ggml.pre", "default");
  auto id = [&](const char* key) {
    const int64_t x = r.get_int(key, -1);
    if (x >= static_cast<int64_t>(n))
      throw std::runtime_error(where + ": " + key + " is outside the vocabulary");
    return static_cast<int32_t>(x);
  };
  v.bos_id = id("tokenizer.ggml.bos_token_id");
  v.eos_id = id("tokenizer.ggml.eos_token_id");
  v.unk_id = id("tokenizer.ggml.unknown_token_id");
  v.pad_id = id("tokenizer.ggml.padding_token_id");
  v.eot_id = id("tokenizer.ggml.eot_token_id");
  v.add_bos = r.get_bool("tokenizer.ggml.add_bos_token",
                         v.kind == Vocab::Kind::SentencePiece || v.bos_id >= 0);
  v.add_eos = r.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix =
      r.get_bool("tokenizer.ggml.add_space_prefix", v.kind == Vocab::Kind::SentencePiece);
  v.chat_template = r.get_string("tokenizer.chat_template", "");
  return v;
}

void vocab_to_gguf(const Vocab& v, gguf::Writer& w) {
  const bool spm = v.kind == Vocab::Kind::SentencePiece;
  w.set("tokenizer.ggml.model", gguf::Value::of_string(spm ? "llama" : "gpt2"));
  w.set("tokenizer.ggml.pre", gguf::Value::of_string(spm ? "default" : v.pre));
  w.set("tokenizer.ggml.tokens", gguf::Value::of_strings(v.tokens));
  if (spm || !v.scores.empty()) {
    std::vector<float> scores = v.scores;
    scores.resize(v.tokens.size(), 0.0f);
    w.set("tokenizer.ggml.scores", gguf::Value::of_f32s(scores));
  }
  std::vector<int32_t> types;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    types.push_back(static_cast<int32_t>(i < v.types.size() ? v.types[i] : TokenType::Normal));
  w.set("tokenizer.ggml.token_type", gguf::Value::of_i32s(types));
  if (!spm) w.set("tokenizer.ggml.merges", gguf::Value::of_strings(v.merges));
  auto set_id = [&](const char* key, int32_t id) {
    if (id >= 0) w.set(key, gguf::Value::of_u32(static_cast<uint32_t>(id)));
  };
  set_id("tokenizer.ggml.bos_token_id", v.bos_id);
  set_id("tokenizer.ggml.eos_token_id", v.eos_id);
  set_id("tokenizer.ggml.unknown_token_id", v.unk_id);
  set_id("tokenizer.ggml.padding_token_id", v.pad_id);
  set_id("tokenizer.ggml.eot_token_id", v.eot_id);
  w.set("tokenizer.ggml.add_bos_token", gguf::Value::of_bool(v.add_bos));
  w.set("tokenizer.ggml.add_eos_token", gguf::Value::of_bool(v.add_eos));
  if (spm) w.set("tokenizer.ggml.add_space_prefix", gguf::Value::of_bool(v.add_space_prefix));
  if (!v.chat_template.empty())
    w.set("tokenizer.chat_template", gguf::Value::of_string(v.chat_template));
}

}  // namespace sandwich::engine
