#pragma once
// sandwich-perplexity's two passes over the chunks, each printing llama-perplexity's lines.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/model.h"
#include "engine/scoring/kld_base_file.h"
#include "engine/scoring/perplexity.h"

namespace sandwich::engine {

// After the first chunk, as llama-perplexity: how long the rest will take.
void print_eta(std::chrono::steady_clock::time_point chunk_start, int32_t chunks);

// What each chunk starts with: BOS for tokenizers that add one, as llama-perplexity.
int32_t chunk_bos(const Model& model);

// Plain perplexity over the first n_chunks chunks of `tokens`; with a base file, also saves
// every scored row's log-probabilities there.
void perplexity_pass(const Model& model, ChunkScorer& scorer, const std::vector<int32_t>& tokens,
                     int32_t n_ctx, int32_t n_chunks, const std::optional<std::string>& base_file);

// This model against the base file's log-probabilities, over the base's own tokens.
void kl_divergence_pass(const Model& model, ChunkScorer& scorer, const KLDBaseReader& base,
                        int32_t n_chunks);

}  // namespace sandwich::engine
