#pragma once
// sandwich-perplexity's work once its command line is parsed: a model's perplexity over a text
// and, against a saved base model, the KL divergence of its next-token distributions, computed
// and printed as llama.cpp's llama-perplexity does (chunks of n_ctx tokens, BOS first, the second
// half of each scored), so the two tools' figures compare line by line on the same files and
// text.
#include <optional>
#include <string>

#include "engine/formats/model.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::engine {

struct PerplexityToolOptions {
  LoadOptions load;
  PlanOptions plan;
  KVCacheDType kv_cache_dtype = kDefaultKVCacheDType;
  std::optional<std::string> text_file;  // -f: the text to score
  // --kl-divergence-base: written by a run without kl_divergence, read by one with it.
  std::optional<std::string> base_file;
  std::optional<int> n_ctx;  // tokens per chunk (default 512; with kl_divergence, the base's)
  int chunks = -1;           // at most this many chunks (-1: all the text holds)
  int batch = 512;           // tokens per forward step
  bool kl_divergence = false;
  // Makes the scorer's executor (a pipeline's head: PipelineTool::executor_factory); null =
  // make_executor.
  ExecutorFactory executor_factory;
};

// Throws CliError for what the options alone refuse (a missing model, text or base file, a
// context below kMinScoringContext, a non-positive chunk count or batch), before anything loads.
void check_perplexity_options(const PerplexityToolOptions& o);

// Checks the options as above, then scores the text (or, with kl_divergence, the base's tokens):
// the figures go to stdout as llama-perplexity prints them, what runs and the progress to stderr.
// Throws CliError for input that does not fit (a missing file, a text shorter than one chunk, a
// base computed with another context or text, a context beyond the model's) and
// std::invalid_argument for a base of another model (check_base_matches).
void run_perplexity_tool(const PerplexityToolOptions& o);

}  // namespace sandwich::engine
