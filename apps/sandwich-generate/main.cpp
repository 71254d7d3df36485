// sandwich-generate: load a model and continue a prompt. Only the generated text (or ids) goes
// to stdout, followed by a newline; statistics go to stderr.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/bounded_file.h"
#include "common/stop_signal.h"
#include "common/tool.h"
#include "engine/pipeline/pipeline_tool.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/generator.h"

using namespace sandwich;
using namespace sandwich::engine;

namespace {

struct Options {
  LoadOptions load;
  std::optional<std::string> prompt, prompt_file;
  GenerationRequest req;
  PlanOptions plan;
  GeneratorOptions go;
  PipelineOptions pipeline;
  bool output_ids = false, reference = false, quiet = false;
};

void add_options(ArgParser& p, Options& o) {
  GenerationRequest& req = o.req;
  add_model_options(p, o.load);
  p.add("-p,--prompt", &o.prompt, "prompt text (default: empty, generation starts from BOS)");
  p.add("-f,--prompt-file", &o.prompt_file, "read the prompt from a file", "F");
  p.add("-n,--n-predict,--max-tokens", &req.max_tokens,
        "number of tokens to generate (default 128)");
  p.add("--temp,--temperature", &req.sampling.temperature,
        "sampling temperature, 0 = greedy (default 1.0)");
  p.add("--top-k", &req.sampling.top_k, "keep the k most likely tokens (default: all)");
  p.add("--top-p", &req.sampling.top_p, "nucleus sampling mass (default 1.0)");
  p.add("--min-p", &req.sampling.min_p, "drop tokens below min-p x p(max) (default 0)");
  p.add("--repeat-penalty,--repetition-penalty", &req.sampling.repetition_penalty,
        "penalty for tokens of the prompt and the output so far, as vLLM's (llama.cpp's "
        "--repeat-penalty looks at the last 64 tokens only) (default 1.0)");
  p.add("--presence-penalty", &req.sampling.presence_penalty,
        "OpenAI presence penalty (default 0)");
  p.add("--frequency-penalty", &req.sampling.frequency_penalty,
        "OpenAI frequency penalty (default 0)");
  p.add("-s,--seed", &req.sampling.seed, "random seed (default: random)");
  p.add("--stop", &req.stop, "stop when the text contains S");
  p.add_flag("--ignore-eos", &req.ignore_eos, "keep generating past end-of-sequence tokens");
  p.add_flag("--output-ids", &o.output_ids, "print the generated token ids instead of text");
  p.add("--logprobs,--n-probs", &req.logprobs,
        "print each generated token's log-probability and the N most likely tokens' to stderr, "
        "a line per token: 'logprob I: ID LP top: ID LP ID LP ...' (from the raw logits)");
  p.add_flag("--reference", &o.reference,
             "use the scalar reference forward pass (slow; for checking)");
  p.add_flag("-q,--quiet", &o.quiet, "no statistics on stderr");
  add_plan_options(p, o.plan);
  add_kv_cache_dtype_option(p, o.go.kv_cache_dtype);
  add_pipeline_options(p, o.pipeline);
}

// Checks the options and reads the prompt file into o.prompt.
void check_options(Options& o) {
  if (o.load.model.empty()) throw CliError("--model is required (see --help)");
  if (o.prompt && o.prompt_file) throw CliError("give --prompt or --prompt-file, not both");
  if (o.req.max_tokens < 0) throw CliError("--max-tokens must not be negative");
  if (o.req.logprobs < -1) throw CliError("--logprobs must not be negative");
  o.req.sampling.validate();
  if (o.reference && o.pipeline.stages > 1)
    throw CliError(
        "--reference runs the whole model in one process: leave out --pipeline-parallel");
  if (o.prompt_file) {
    o.prompt = read_bounded_file(*o.prompt_file, file_kinds::kPromptFile);
  }
}

void print_logprobs(const GenerationResult& r) {
  for (size_t i = 0; i < r.logprobs.size(); ++i) {
    const TokenLogprob& lp = r.logprobs[i];
    std::fprintf(stderr, "logprob %zu: %d %.6f top:", i, lp.token, lp.logprob);
    for (const auto& t : lp.top) std::fprintf(stderr, " %d %.6f", t.token, t.logprob);
    std::fprintf(stderr, "\n");
  }
}

void print_statistics(const AppliedPlan& applied, const Model& model, const Generator& gen,
                      const GenerationRequest& req, const GenerationResult& r) {
  const double n_dec = r.tokens.size() > 1 ? static_cast<double>(r.tokens.size() - 1) : 0.0;
  std::fprintf(
      stderr,
      "%s\nmodel: %s\nkv cache: %s\nload: %.2f s | prompt: %zu tokens, %.2f tok/s | "
      "generated: %zu tokens, %.2f tok/s | finish: %s\n",
      applied.line.c_str(), model.source.c_str(),
      gen.kv_cache() ? gen.kv_cache()->describe().c_str() : "none (reference forward pass)",
      model.load_seconds, req.prompt.size(),
      r.prefill_seconds > 0 ? static_cast<double>(req.prompt.size()) / r.prefill_seconds : 0.0,
      r.tokens.size(), r.decode_seconds > 0 ? n_dec / r.decode_seconds : 0.0,
      std::string(finish_reason_name(r.finish_reason)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing to drain: a signal stops the run, with one line (ranks go with the program).
  stop_on_signal("sandwich-generate", "starting");
  return run_tool("sandwich-generate", [&]() -> int {
    Options o;
    o.req.max_tokens = 128;
    ArgParser p("sandwich-generate", "Generate text from a prompt with a Llama-family model.");
    add_options(p, o);
    if (!p.parse(argc, argv)) return 0;
    check_options(o);
    GeneratorOptions& go = o.go;
    o.load.threads = o.plan.threads;
    // Plans and configurations are checked before the model loads, which may take minutes.
    go.threads = o.plan.threads;
    go.kind = o.reference ? ForwardKind::Reference : ForwardKind::Fast;
    go.batch_invariant = o.plan.batch_invariant;
    go.ablation = o.plan.ablation;
    const ResolvedPlan configs = resolve_plan(o.plan);
    go.prefill = configs.plan.prefill;
    go.decode = configs.plan.decode;
    // Outlives the generator: its end ends the pipeline's workers.
    PipelineTool pipe(o.pipeline, "sandwich-generate");
    if (pipe.worker()) return pipe.serve(o.load, configs);
    pipe.choose_layers(o.load);
    go.executor_factory = pipe.executor_factory(configs.plan);

    set_stop_phase("loading the model");
    auto model = load_model(o.load);
    for (const auto& n : model->notes) std::cerr << "note: " << n << "\n";
    // Before the generator makes its executors: rank processes inherit the installed table.
    const AppliedPlan applied =
        apply_plan(configs, *model, o.load.model, "sandwich-generate", std::cerr);
    const Tokenizer& tok = *model->tokenizer;
    GenerationRequest& req = o.req;
    req.prompt = tok.encode(o.prompt.value_or(""), tok.add_bos_default());
    if (req.prompt.empty())
      throw CliError("the prompt is empty and this tokenizer adds no BOS token: give --prompt");

    set_stop_phase("generating");
    Generator gen(*model, go);
    GenerationResult r;
    if (o.output_ids) {
      r = gen.generate(req);
      for (size_t i = 0; i < r.tokens.size(); ++i) std::cout << (i ? " " : "") << r.tokens[i];
    } else {
      r = gen.generate(req, [](std::string_view s) { std::cout << s << std::flush; });
    }
    std::cout << "\n" << std::flush;
    print_logprobs(r);
    if (!o.quiet) print_statistics(applied, *model, gen, req, r);
    return 0;
  });
}
