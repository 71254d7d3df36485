#pragma once
// The model-file targets' common tail: a file the format reader accepted goes on through the
// whole load (shape checks, packing, tokenizer) when it is small enough to pack quickly.
#include <filesystem>

#include "engine/formats/model.h"
#include "formats/model_source.h"
#include "fuzz_support.h"

namespace sandwich::fuzz {

inline void load_if_small(const engine::ModelSource& src, const std::filesystem::path& path) {
  const engine::ModelConfig& c = src.config;
  const int64_t weights =
      int64_t{c.vocab_size} * c.dim * 2 +
      int64_t{c.n_layers} * (4 * int64_t{c.dim} * c.dim + 3 * c.dim * c.ffn_dim);
  if (weights > (1 << 20) || c.max_seq_len > 4096) return;
  engine::LoadOptions o;
  o.model = path.string();
  o.threads = 1;
  o.require_tokenizer = false;
  const auto m = engine::load_model(o);
  if (m->tokenizer) exercise_tokenizer(*m->tokenizer);
}

}  // namespace sandwich::fuzz
