#include "scoring/scoring_passes.h"

#include <cstdio>
#include <span>

#include "engine/scoring/score_stats.h"

namespace sandwich::engine {

void print_eta(std::chrono::steady_clock::time_point chunk_start, int32_t chunks) {
  const double pass_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - chunk_start).count();
  std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", pass_seconds,
               pass_seconds * chunks / 60.0);
}

int32_t chunk_bos(const Model& m) {
  return m.tokenizer->add_bos_default() ? m.tokenizer->bos_id() : -1;
}

void perplexity_pass(const Model& model, ChunkScorer& scorer, const std::vector<int32_t>& tokens,
                     int32_t n_ctx, int32_t n_chunks, const std::optional<std::string>& base_file) {
  const int32_t V = model.config.vocab_size, first = scored_first(n_ctx),
                n_scored = scored_count(n_ctx);
  std::optional<KLDBaseWriter> writer;
  if (base_file) {
    KLDBaseInfo info = KLDBaseInfo::of(model);
    info.n_ctx = n_ctx;
    info.n_chunks = n_chunks;
    info.tokens.assign(tokens.begin(), tokens.begin() + int64_t{n_chunks} * n_ctx);
    writer.emplace(*base_file, info);
    std::fprintf(stderr, "perplexity: saving the log-probabilities to %s\n", base_file->c_str());
  }
  PerplexityStats stats;
  std::vector<float> log_probs(static_cast<size_t>(n_scored) * V);
  for (int32_t i = 0; i < n_chunks; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> chunk = scoring_chunk(tokens, n_ctx, i, chunk_bos(model));
    const std::vector<float> logits = scorer.run(chunk);
    for (int32_t r = 0; r < n_scored; ++r) {
      const std::span<float> lp(log_probs.data() + static_cast<size_t>(r) * V, V);
      log_softmax(std::span<const float>(logits).subspan(static_cast<size_t>(r) * V, V), lp);
      stats.add(-lp[tokens[static_cast<size_t>(i) * n_ctx + first + r + 1]]);
    }
    if (writer) writer->add_chunk(log_probs);
    if (i == 0) print_eta(t0, n_chunks);
    std::printf("[%d]%.4f,", i + 1, stats.ppl().value);
    std::fflush(stdout);
  }
  std::printf("\n");
  if (writer) writer->finish();
  const Estimate ppl = stats.ppl();
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.error);
}

}  // namespace sandwich::engine
