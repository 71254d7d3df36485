#include "scoring/scoring_passes.h"

#include <cstdio>
#include <span>
#include <utility>

#include "engine/scoring/score_stats.h"

namespace sandwich::engine {
namespace {

void print_kld_summary(const KLDivergenceStats& s) {
  auto line = [](const char* label, Estimate e) {
    std::printf("%s: %10.6f ± %10.6f\n", label, e.value, e.error);
  };
  auto pct = [](const char* label, Estimate e) {
    std::printf("%s: %6.3f ± %5.3f %%\n", label, 100 * e.value, 100 * e.error);
  };
  std::printf("====== Perplexity statistics ======\n");
  line("Mean PPL(Q)                   ", s.ppl());
  line("Mean PPL(base)                ", s.ppl_base());
  std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * s.ln_ppl_correlation());
  line("Mean ln(PPL(Q)/PPL(base))     ", s.ln_ppl_ratio());
  line("Mean PPL(Q)/PPL(base)         ", s.ppl_ratio());
  line("Mean PPL(Q)-PPL(base)         ", s.ppl_difference());
  std::printf("\n====== KL divergence statistics ======\n");
  line("Mean    KLD", s.kld());
  const std::pair<const char*, double> kld_rows[] = {
      {"Maximum KLD", 1},   {"99.9%   KLD", 0.999}, {"99.0%   KLD", 0.99}, {"Median  KLD", 0.5},
      {"10.0%   KLD", 0.1}, {" 5.0%   KLD", 0.05},  {" 1.0%   KLD", 0.01}, {"Minimum KLD", 0}};
  for (const auto& [label, f] : kld_rows) std::printf("%s: %10.6f\n", label, s.kld_quantile(f));
  std::printf("\n====== Token probability statistics ======\n");
  pct("Mean    Δp", s.delta_p());
  const std::pair<const char*, double> dp_rows[] = {
      {"Maximum Δp", 1},   {"99.9%   Δp", 0.999}, {"99.0%   Δp", 0.99}, {"95.0%   Δp", 0.95},
      {"90.0%   Δp", 0.9}, {"75.0%   Δp", 0.75},  {"Median  Δp", 0.5},  {"25.0%   Δp", 0.25},
      {"10.0%   Δp", 0.1}, {" 5.0%   Δp", 0.05},  {" 1.0%   Δp", 0.01}, {" 0.1%   Δp", 0.001},
      {"Minimum Δp", 0}};
  for (const auto& [label, f] : dp_rows)
    std::printf("%s: %6.3f%%\n", label, 100 * s.delta_p_quantile(f));
  pct("RMS Δp    ", s.rms_delta_p());
  pct("Same top p", s.same_top());
}

}  // namespace

void kl_divergence_pass(const Model& model, ChunkScorer& scorer, const KLDBaseReader& base,
                        int32_t n_chunks) {
  const KLDBaseInfo& info = base.info();
  const int32_t V = model.config.vocab_size, n_ctx = info.n_ctx, first = scored_first(n_ctx),
                n_scored = scored_count(n_ctx);
  KLDivergenceStats stats;
  std::vector<float> log_probs(static_cast<size_t>(V));
  std::printf(
      "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence        "
      "      Δp RMS            Same top p\n");
  for (int32_t i = 0; i < n_chunks; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> logits =
        scorer.run(scoring_chunk(info.tokens, n_ctx, i, chunk_bos(model)));
    const std::span<const float> rows = base.chunk(i);
    for (int32_t r = 0; r < n_scored; ++r) {
      const size_t off = static_cast<size_t>(r) * V;
      log_softmax(std::span<const float>(logits).subspan(off, V), log_probs);
      stats.add(rows.subspan(off, V), log_probs,
                info.tokens[static_cast<size_t>(i) * n_ctx + first + r + 1]);
    }
    if (i == 0) print_eta(t0, n_chunks);
    const Estimate ppl = stats.ppl(), ratio = stats.ln_ppl_ratio(), kld = stats.kld(),
                   rms = stats.rms_delta_p(), top = stats.same_top();
    std::printf(
        "%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%"
        "    %6.3f ± %6.3f %%\n",
        i + 1, ppl.value, ppl.error, ratio.value, ratio.error, kld.value, kld.error,
        100 * rms.value, 100 * rms.error, 100 * top.value, 100 * top.error);
    std::fflush(stdout);
  }
  std::printf("\n");
  print_kld_summary(stats);
}

}  // namespace sandwich::engine
