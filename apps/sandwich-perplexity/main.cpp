// sandwich-perplexity: a model's perplexity over a text and, against a saved base model, the KL
// divergence of its next-token distributions, computed and printed as llama.cpp's
// llama-perplexity does (chunks of --ctx-size tokens, BOS first, the second half of each scored),
// so the two tools' figures compare line by line on the same files and text.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/tool.h"
#include "engine/plans/tool_options.h"
#include "engine/scoring/kld_base_file.h"
#include "engine/scoring/perplexity.h"
#include "engine/scoring/score_stats.h"

namespace sandwich::engine {
namespace {

struct Options {
  LoadOptions load;
  PlanOptions plan;
  KVCacheDType kv_cache_dtype = kDefaultKVCacheDType;
  std::optional<std::string> text_file, base_file;
  std::optional<int> n_ctx;
  int chunks = -1, batch = 512;
  bool kl_divergence = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw CliError("-f " + path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw CliError("-f " + path + " is a directory, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What each chunk starts with: BOS for tokenizers that add one, as llama-perplexity.
int32_t chunk_bos(const Model& m) {
  return m.tokenizer->add_bos_default() ? m.tokenizer->bos_id() : -1;
}

void print_eta(double pass_seconds, int32_t chunks) {
  std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", pass_seconds,
               pass_seconds * chunks / 60.0);
}

// Plain perplexity; with a base file, also saves every scored row's log-probabilities.
int run_perplexity(const Options& o, const Model& model, ChunkScorer& scorer,
                   const std::vector<int32_t>& tokens, int32_t n_ctx, int32_t n_chunks) {
  const int32_t V = model.config.vocab_size, first = scored_first(n_ctx),
                n_scored = scored_count(n_ctx);
  std::optional<KLDBaseWriter> writer;
  if (o.base_file) {
    KLDBaseInfo info = KLDBaseInfo::of(model);
    info.n_ctx = n_ctx;
    info.n_chunks = n_chunks;
    info.tokens.assign(tokens.begin(), tokens.begin() + int64_t{n_chunks} * n_ctx);
    writer.emplace(*o.base_file, info);
    std::fprintf(stderr, "perplexity: saving the log-probabilities to %s\n", o.base_file->c_str());
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
    if (i == 0) print_eta(seconds_since(t0), n_chunks);
    std::printf("[%d]%.4f,", i + 1, stats.ppl().value);
    std::fflush(stdout);
  }
  std::printf("\n");
  if (writer) writer->finish();
  const Estimate ppl = stats.ppl();
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.error);
  return 0;
}

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

// This model against the base file's log-probabilities, over the base's own tokens.
int run_kl_divergence(const Model& model, ChunkScorer& scorer, const KLDBaseReader& base,
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
    if (i == 0) print_eta(seconds_since(t0), n_chunks);
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
  return 0;
}

int run(int argc, char** argv) {
  Options o;
  ArgParser p(
      "sandwich-perplexity",
      "Perplexity of a model over a text, and the KL divergence of its next-token distributions "
      "from a base model's, as llama.cpp's llama-perplexity computes them: the text's tokens in "
      "chunks of --ctx-size (the first of each replaced by BOS), the second half of each chunk "
      "scored. --kl-divergence-base FILE alone saves the model's log-probabilities at every "
      "scored token (with the text's tokens, the context size, and the model's vocabulary and "
      "shape: 4 bytes per vocabulary entry per scored token); --kl-divergence with it compares "
      "another version of the model (a quantization) with that base over the same tokens. The "
      "file is our own (float log-probabilities), not llama.cpp's. Chunks run as prefill "
      "steps under the prefill configuration (--prefill-config, --plan; default one rank of "
      "-t cores).");
  add_model_options(p, o.load);
  p.add("-f,--file", &o.text_file, "the text to score", "FILE");
  p.option("-c,--ctx-size", "N", "tokens per chunk (default 512; with --kl-divergence, the base's)",
           [&o](const std::string& v) {
             o.n_ctx = static_cast<int>(ArgParser::parse_int("--ctx-size", v));
           });
  p.add("--chunks", &o.chunks, "score at most N chunks (default: all the text holds)");
  p.add("-b,--batch-size", &o.batch, "tokens per forward step (default 512)");
  p.add("--kl-divergence-base", &o.base_file,
        "the base model's log-probabilities: written by a run without --kl-divergence, read by "
        "one with it",
        "FILE");
  p.add_flag("--kl-divergence", &o.kl_divergence,
             "compare this model with the base of --kl-divergence-base: KL divergence, same top "
             "token, PPL(Q)/PPL(base), Δp");
  add_plan_options(p, o.plan);
  add_kv_cache_dtype_option(p, o.kv_cache_dtype);
  if (!p.parse(argc, argv)) return 0;

  // Everything the command line alone can refuse, before the model loads.
  if (o.load.model.empty()) throw CliError("--model is required (see --help)");
  if (o.kl_divergence && !o.base_file)
    throw CliError(
        "--kl-divergence needs --kl-divergence-base FILE (the base's log-probabilities)");
  if (!o.kl_divergence && !o.text_file) throw CliError("-f FILE (the text to score) is required");
  if (o.n_ctx && *o.n_ctx < kMinScoringContext)
    throw CliError("--ctx-size must be at least " + std::to_string(kMinScoringContext) +
                   " (the second half of a chunk is scored), got " + std::to_string(*o.n_ctx));
  if (o.chunks == 0 || o.chunks < -1)
    throw CliError("--chunks must be positive, got " + std::to_string(o.chunks));
  if (o.batch < 1) throw CliError("--batch-size must be positive, got " + std::to_string(o.batch));
  std::optional<std::string> text;
  if (o.text_file) text = read_text(*o.text_file);
  std::optional<KLDBaseReader> base;
  if (o.kl_divergence) {
    std::error_code ec;
    if (!std::filesystem::exists(*o.base_file, ec))
      throw CliError("--kl-divergence-base " + *o.base_file +
                     ": no such file (write it first: the same command on the base model, "
                     "without --kl-divergence)");
    base.emplace(*o.base_file);
    if (o.n_ctx && *o.n_ctx != base->info().n_ctx)
      throw CliError(*o.base_file + " was computed with --ctx-size " +
                     std::to_string(base->info().n_ctx) + ", not " + std::to_string(*o.n_ctx) +
                     " (leave --ctx-size out to use the base's)");
    if (o.chunks > base->info().n_chunks)
      throw CliError("--chunks " + std::to_string(o.chunks) + ": " + *o.base_file + " holds " +
                     std::to_string(base->info().n_chunks));
  }
  const int32_t n_ctx = base ? base->info().n_ctx : o.n_ctx.value_or(512);
  o.load.threads = o.plan.threads;
  const ResolvedPlan configs = resolve_plan(o.plan);

  auto model = load_model(o.load);
  if (!model->tokenizer) throw CliError("the model has no tokenizer: pass --tokenizer");
  if (n_ctx > model->config.max_seq_len)
    throw CliError("--ctx-size " + std::to_string(n_ctx) + " is larger than the model's context (" +
                   std::to_string(model->config.max_seq_len) + " tokens)");
  if (base) check_base_matches(base->info(), *model, *o.base_file);

  const Tokenizer& tok = *model->tokenizer;
  std::vector<int32_t> tokens;
  const auto t_tok = std::chrono::steady_clock::now();
  if (text) tokens = tok.encode(*text, tok.add_bos_default());
  const double tok_seconds = seconds_since(t_tok);
  int32_t n_chunks = 0;
  if (base) {
    n_chunks = o.chunks > 0 ? o.chunks : base->info().n_chunks;
    // The text, if given, must be the base's: the comparison runs over the base's tokens.
    const auto& bt = base->info().tokens;
    if (text && (tokens.size() < bt.size() || !std::equal(bt.begin(), bt.end(), tokens.begin())))
      throw CliError(*o.text_file + " does not tokenize to the text of " + *o.base_file +
                     " (leave -f out to score the base's own text)");
  } else {
    const int64_t whole = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (whole < 1)
      throw CliError(*o.text_file + " has " + std::to_string(tokens.size()) +
                     " tokens, fewer than one chunk of --ctx-size " + std::to_string(n_ctx));
    n_chunks = static_cast<int32_t>(o.chunks > 0 ? std::min<int64_t>(o.chunks, whole) : whole);
  }

  // Before the scorer makes its executor: rank processes inherit the installed table.
  const AppliedPlan applied =
      apply_plan(configs, *model, o.load.model, "sandwich-perplexity", std::cerr);
  ScorerOptions so;
  so.n_ctx = n_ctx;
  so.batch = o.batch;
  so.config = configs.plan.prefill;
  so.kv_cache_dtype = o.kv_cache_dtype;
  so.batch_invariant = o.plan.batch_invariant;
  ChunkScorer scorer(*model, so);

  for (const auto& n : model->notes) std::cerr << "note: " << n << "\n";
  std::fprintf(stderr, "%s\nmodel: %s\nweights: %s\nkv cache: %s\n", applied.line.c_str(),
               model->source.c_str(), model->weight_types.c_str(),
               std::string(kv_cache_dtype_name(o.kv_cache_dtype)).c_str());
  if (base)
    std::fprintf(stderr, "perplexity: base %s (%s), %d chunks of %d tokens\n", o.base_file->c_str(),
                 base->info().model.c_str(), base->info().n_chunks, n_ctx);
  else
    std::fprintf(stderr, "perplexity: tokenizing the input took %.1f ms: %zu tokens\n",
                 1e3 * tok_seconds, tokens.size());
  std::fprintf(stderr,
               "perplexity: calculating over %d chunks, n_ctx=%d, batch_size=%d, scoring %d "
               "tokens per chunk\n",
               n_chunks, n_ctx, std::min(o.batch, n_ctx), scored_count(n_ctx));
  return base ? run_kl_divergence(*model, scorer, *base, n_chunks)
              : run_perplexity(o, *model, scorer, tokens, n_ctx, n_chunks);
}

}  // namespace
}  // namespace sandwich::engine

int main(int argc, char** argv) {
  return sandwich::run_tool("sandwich-perplexity",
                            [&]() -> int { return sandwich::engine::run(argc, argv); });
}
