#pragma once
// Tokenizers: SentencePiece (libsentencepiece), score-based SPM BPE from a vocabulary (GGUF,
// llama2.c tokenizer.bin, tokenizer.json), and byte-level BPE (Llama-3 tiktoken, GGUF gpt2,
// tokenizer.json). One interface; load_tokenizer() detects the format.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sandwich::engine {

namespace gguf {
class Reader;
class Writer;
}  // namespace gguf

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// A vocabulary as GGUF stores it; the common currency between file formats and tokenizers.
struct Vocab {
  enum class Kind { SentencePiece, ByteLevelBPE };
  Kind kind = Kind::SentencePiece;
  std::string pre = "default";  // byte-level pre-tokenizer name ("llama-bpe" for Llama-3)
  std::string pre_regex;        // explicit pre-tokenizer pattern (tokenizer.json); overrides pre
  std::vector<std::string> tokens;
  std::vector<float> scores;        // SPM merge priority (higher first); may be empty for BPE
  std::vector<TokenType> types;     // empty means all Normal
  std::vector<std::string> merges;  // BPE "left right" pairs, highest priority first
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, eot_id = -1;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;  // SPM: prepend "▁" to the text
  std::string chat_template;     // Jinja source if the file carried one
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual int32_t vocab_size() const = 0;
  // Encodes text; BOS is prepended when add_bos is true. With parse_special, special-token
  // strings such as "<|eot_id|>" in the text become their ids, otherwise they are plain text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special = false) const = 0;
  // The bytes token `id` adds to the text when it follows token `prev` (-1 at the start):
  // SPM drops the dummy-prefix space after BOS or at the start; byte tokens give raw bytes
  // (possibly part of a UTF-8 sequence); control tokens give "".
  virtual std::string piece(int32_t id, int32_t prev) const = 0;
  // Decodes a whole sequence to bytes (not necessarily valid UTF-8). Special/control tokens
  // are skipped unless keep_special, in which case their text is emitted.
  virtual std::string decode(std::span<const int32_t> ids, bool keep_special = false) const = 0;
  // The vocabulary string of a token, as stored.
  virtual std::string_view token_text(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // Id of an exact vocabulary string, or -1.
  virtual int32_t token_id(std::string_view text) const = 0;

  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  bool add_bos_default() const { return add_bos_; }
  // Tokens that end generation (EOS, end-of-turn, ...).
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  const std::string& chat_template() const { return chat_template_; }
  void set_chat_template(std::string t) { chat_template_ = std::move(t); }

 protected:
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool add_bos_ = true;
  std::vector<int32_t> stop_ids_;
  std::string chat_template_;
};

// Loads any supported tokenizer: a SentencePiece .model, a Llama-3 tiktoken tokenizer.model,
// a tokenizer.json, a llama2.c tokenizer.bin, a GGUF file's embedded vocab, or a Hugging Face
// model folder holding one of these. Throws std::runtime_error naming the path and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);
std::unique_ptr<Tokenizer> make_tokenizer(Vocab vocab);
Vocab vocab_from_gguf(const gguf::Reader& file);
// The vocabulary of any tokenizer file load_tokenizer accepts (to embed it in a GGUF).
Vocab vocab_from_tokenizer_file(const std::filesystem::path& path);
// Writes the tokenizer.ggml.* keys the way llama.cpp's converters do, so llama.cpp loads the file.
void vocab_to_gguf(const Vocab& vocab, gguf::Writer& out);
// A deterministic, valid vocabulary of exactly n_tokens entries for dummy-weight models: SPM
// with byte fallback, or byte-level BPE with Llama-3's special tokens. Any UTF-8 text
// round-trips through it.
Vocab make_synthetic_vocab(Vocab::Kind kind, int32_t n_tokens);

// Turns a stream of generated ids into text pieces that are always valid UTF-8: an incomplete
// multi-byte sequence is held back until it completes, bytes that can never be valid become
// U+FFFD. Stop strings and streaming build on it.
class IncrementalDecoder {
 public:
  // prev: the last token before the first one pushed (e.g. the prompt's last token), or -1.
  // keep_special: special tokens give their vocabulary text instead of nothing.
  IncrementalDecoder(const Tokenizer& tok, int32_t prev = -1, bool keep_special = false)
      : tok_(tok), prev_(prev), keep_special_(keep_special) {}
  // Returns the newly completed text (possibly empty).
  std::string push(int32_t id);
  // Returns what is still held back, with incomplete sequences replaced by U+FFFD.
  std::string flush();

 private:
  const Tokenizer& tok_;
  int32_t prev_;
  bool keep_special_;
  std::string pending_;
};

}  // namespace sandwich::engine
