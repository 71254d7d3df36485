#pragma once
// The file of `sandwich-perplexity --kl-divergence-base FILE`: a base model's log-probabilities
// at every scored position of a text, for comparing other versions of the model with it
// (quantizations) without running the base again. Our own format, not llama.cpp's (which keeps
// 16-bit log-probabilities): the base's float log-probabilities as computed, so a model compared
// with itself gives a KL divergence of exactly 0.
//
// Layout (little-endian): "SANDKLD1"; u32 n_ctx, n_chunks, n_vocab; u32 dim, layers, heads,
// kv_heads, ffn (the base model's shape); u64 vocab_hash; u32 length + bytes of the base model's
// description; zero padding to 4 bytes; i32 tokens[n_chunks * n_ctx] (the text as tokenized,
// before each chunk's first token became BOS); f32 log_probs[n_chunks][scored_count(n_ctx)]
// [n_vocab]. 4 bytes per vocabulary entry per scored token.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "engine/formats/mapped_file.h"
#include "engine/formats/model.h"
#include "engine/formats/model_shape.h"

namespace sandwich::engine {

struct KLDBaseInfo {
  int32_t n_ctx = 0, n_chunks = 0;
  // The base model's shape; shape.vocab_size is n_vocab. The file has no head_dim (0 when read).
  ModelShape shape;
  uint64_t vocab_hash = 0;
  std::string model;            // the base model, for messages
  std::vector<int32_t> tokens;  // n_chunks * n_ctx

  // What a model with this tokenizer and shape would write (tokens, chunks and n_ctx aside).
  static KLDBaseInfo of(const Model& model);
};

// A digest of the token strings (FNV-1a over each with a separator), so that a base computed
// with another vocabulary of the same size is refused too.
uint64_t vocab_hash(const Tokenizer& tokenizer);

// Throws std::invalid_argument, one line naming the file, when `model` cannot be compared with
// the base: another vocabulary (size or tokens) or another shape (dim, layers, heads, FFN).
void check_base_matches(const KLDBaseInfo& base, const Model& model,
                        const std::filesystem::path& file);

// Writes FILE.partial and renames it to FILE once every chunk is in; a writer destroyed before
// finish() removes the partial file.
class KLDBaseWriter {
 public:
  KLDBaseWriter(const std::filesystem::path& path, const KLDBaseInfo& info);
  ~KLDBaseWriter();
  // One chunk's log-probabilities: scored_count(n_ctx) rows of n_vocab values.
  void add_chunk(std::span<const float> log_probs);
  void finish();

 private:
  std::filesystem::path path_, partial_;
  KLDBaseInfo info_;
  std::ofstream out_;
  int32_t written_ = 0;
  bool finished_ = false;
};

// Maps a base file; throws std::runtime_error naming the file if it is not one or is truncated.
class KLDBaseReader {
 public:
  explicit KLDBaseReader(const std::filesystem::path& path);
  const KLDBaseInfo& info() const { return info_; }
  // Chunk i's log-probabilities: scored_count(n_ctx) rows of n_vocab values.
  std::span<const float> chunk(int32_t i) const;

 private:
  MappedFile file_;
  KLDBaseInfo info_;
  size_t rows_offset_ = 0;
};

}  // namespace sandwich::engine
