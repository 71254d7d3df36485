#include "engine/scoring/perplexity_tool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "common/bounded_file.h"
#include "common/cli.h"
#include "engine/plans/plan_check.h"
#include "engine/scoring/kld_base_file.h"
#include "engine/scoring/perplexity.h"
#include "scoring/scoring_passes.h"

namespace sandwich::engine {
namespace {

std::string read_text(const std::string& path) {
  try {
    return read_bounded_file(path, file_kinds::kTextToScore);
  } catch (const std::runtime_error& e) {
    throw CliError(std::string("-f: ") + e.what());
  }
}

// What the run scores, read before the model loads.
struct ScoringInputs {
  std::optional<std::string> text;
  std::optional<KLDBaseReader> base;
  int32_t n_ctx = 0;
  std::vector<int32_t> tokens;  // the text's, once tokenized
  double tokenize_seconds = 0;
  int32_t n_chunks = 0;
};

void read_inputs(const PerplexityToolOptions& o, ScoringInputs& in) {
  if (o.text_file) in.text = read_text(*o.text_file);
  if (o.kl_divergence) {
    std::error_code ec;
    if (!std::filesystem::exists(*o.base_file, ec))
      throw CliError("--kl-divergence-base " + *o.base_file +
                     ": no such file (write it first: the same command on the base model, "
                     "without --kl-divergence)");
    const KLDBaseInfo& info = in.base.emplace(*o.base_file).info();
    if (o.n_ctx && *o.n_ctx != info.n_ctx)
      throw CliError(*o.base_file + " was computed with --ctx-size " + std::to_string(info.n_ctx) +
                     ", not " + std::to_string(*o.n_ctx) +
                     " (leave --ctx-size out to use the base's)");
    if (o.chunks > info.n_chunks)
      throw CliError("--chunks " + std::to_string(o.chunks) + ": " + *o.base_file + " holds " +
                     std::to_string(info.n_chunks));
  }
  in.n_ctx = in.base ? in.base->info().n_ctx : o.n_ctx.value_or(512);
}

// Tokenizes the text and counts the chunks to score.
void tokenize_text(const PerplexityToolOptions& o, const Model& model, ScoringInputs& in) {
  if (!model.tokenizer) throw CliError("the model has no tokenizer: pass --tokenizer");
  if (in.n_ctx > model.config.max_seq_len)
    throw CliError("--ctx-size " + std::to_string(in.n_ctx) +
                   " is larger than the model's context (" +
                   std::to_string(model.config.max_seq_len) + " tokens)");
  if (in.base) check_base_matches(in.base->info(), model, *o.base_file);
  const Tokenizer& tok = *model.tokenizer;
  const auto t0 = std::chrono::steady_clock::now();
  if (in.text) in.tokens = tok.encode(*in.text, tok.add_bos_default());
  in.tokenize_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (in.base) {
    in.n_chunks = o.chunks > 0 ? o.chunks : in.base->info().n_chunks;
    // The text, if given, must be the base's: the comparison runs over the base's tokens.
    const auto& bt = in.base->info().tokens;
    if (in.text &&
        (in.tokens.size() < bt.size() || !std::equal(bt.begin(), bt.end(), in.tokens.begin())))
      throw CliError(*o.text_file + " does not tokenize to the text of " + *o.base_file +
                     " (leave -f out to score the base's own text)");
  } else {
    const int64_t whole = static_cast<int64_t>(in.tokens.size()) / in.n_ctx;
    if (whole < 1)
      throw CliError(*o.text_file + " has " + std::to_string(in.tokens.size()) +
                     " tokens, fewer than one chunk of --ctx-size " + std::to_string(in.n_ctx));
    in.n_chunks = static_cast<int32_t>(o.chunks > 0 ? std::min<int64_t>(o.chunks, whole) : whole);
  }
}

void print_run(const PerplexityToolOptions& o, const Model& model, const AppliedPlan& applied,
               const ScoringInputs& in) {
  for (const auto& n : model.notes) std::cerr << "note: " << n << "\n";
  std::fprintf(stderr, "%s\nmodel: %s\nweights: %s\nkv cache: %s\n", applied.line.c_str(),
               model.source.c_str(), model.weight_types.c_str(),
               std::string(kv_cache_dtype_name(o.kv_cache_dtype)).c_str());
  if (in.base)
    std::fprintf(stderr, "perplexity: base %s (%s), %d chunks of %d tokens\n", o.base_file->c_str(),
                 in.base->info().model.c_str(), in.base->info().n_chunks, in.n_ctx);
  else
    std::fprintf(stderr, "perplexity: tokenizing the input took %.1f ms: %zu tokens\n",
                 1e3 * in.tokenize_seconds, in.tokens.size());
  std::fprintf(stderr,
               "perplexity: calculating over %d chunks, n_ctx=%d, batch_size=%d, scoring %d "
               "tokens per chunk\n",
               in.n_chunks, in.n_ctx, std::min(o.batch, in.n_ctx), scored_count(in.n_ctx));
}

}  // namespace

void check_perplexity_options(const PerplexityToolOptions& o) {
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
}

void run_perplexity_tool(const PerplexityToolOptions& o) {
  check_perplexity_options(o);
  ScoringInputs in;
  read_inputs(o, in);
  LoadOptions load = o.load;
  load.threads = o.plan.threads;
  const ResolvedPlan configs = resolve_plan(o.plan);

  const auto model = load_model(load);
  tokenize_text(o, *model, in);
  // Before the scorer makes its executor: rank processes inherit the installed table.
  const AppliedPlan applied =
      apply_plan(configs, *model, o.load.model, "sandwich-perplexity", std::cerr);
  ScorerOptions so;
  so.n_ctx = in.n_ctx;
  so.batch = o.batch;
  so.config = configs.plan.prefill;
  so.kv_cache_dtype = o.kv_cache_dtype;
  so.batch_invariant = o.plan.batch_invariant;
  so.ablation = o.plan.ablation;
  so.executor_factory = o.executor_factory;
  ChunkScorer scorer(*model, so);
  print_run(o, *model, applied, in);
  if (in.base)
    kl_divergence_pass(*model, scorer, *in.base, in.n_chunks);
  else
    perplexity_pass(*model, scorer, in.tokens, in.n_ctx, in.n_chunks, o.base_file);
}

}  // namespace sandwich::engine
