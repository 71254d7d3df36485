// sandwich-perplexity: its command line. The scoring (engine/scoring/perplexity_tool.h) computes
// and prints perplexity and KL divergence as llama.cpp's llama-perplexity does.
#include <string>

#include "common/stop_signal.h"
#include "common/tool.h"
#include "engine/pipeline/pipeline_tool.h"
#include "engine/plans/tool_options.h"
#include "engine/scoring/perplexity_tool.h"

namespace sandwich::engine {
namespace {

int run(int argc, char** argv) {
  PerplexityToolOptions o;
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
  PipelineOptions pipeline;
  add_pipeline_options(p, pipeline);
  if (!p.parse(argc, argv)) return 0;
  check_perplexity_options(o);
  // Outlives the scorer: its end ends the pipeline's workers.
  PipelineTool pipe(pipeline, "sandwich-perplexity");
  if (pipeline.stages > 1) {
    const ResolvedPlan plan = resolve_plan(o.plan);
    if (pipe.worker()) {
      LoadOptions load = o.load;
      load.threads = o.plan.threads;
      return pipe.serve(load, plan);
    }
    pipe.choose_layers(o.load);
    o.executor_factory = pipe.executor_factory(plan.plan);
  }
  run_perplexity_tool(o);
  return 0;
}

}  // namespace
}  // namespace sandwich::engine

int main(int argc, char** argv) {
  // Nothing to drain: a signal stops the run, with one line (ranks go with the program).
  sandwich::stop_on_signal("sandwich-perplexity", "scoring");
  return sandwich::run_tool("sandwich-perplexity",
                            [&]() -> int { return sandwich::engine::run(argc, argv); });
}
