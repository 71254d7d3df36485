// sandwich-bench engine: the command line of the engine's benchmark (run_engine_bench).
#include "engine_command.h"

#include "common/cli.h"
#include "common/stop_signal.h"
#include "common/tool.h"
#include "engine/pipeline/pipeline_tool.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/engine_bench.h"

namespace sandwich {
namespace {

using namespace engine;

constexpr const char* kProgram = "sandwich-bench engine";

void add_engine_bench_options(ArgParser& p, EngineBenchOptions& o) {
  add_model_options(p, o.load);
  p.add("-p,--prompt-tokens", &o.prompt_tokens,
        "prompt length of the prefill test (default 512; 0 skips it)");
  p.add("-n,--gen-tokens", &o.gen_tokens,
        "decode steps of the generation test (default 128; 0 skips it)");
  p.add("-d,--depth", &o.depth,
        "positions already in the KV cache when the generation test starts, as llama-bench's "
        "--n-depth (default 0): decode at a long context");
  add_plan_options(p, o.plan);
  add_kv_cache_dtype_option(p, o.kv_dtype);
  p.add("-r,--reps", &o.reps, "measured repetitions (default 3)");
  p.add("--warmup", &o.warmup, "unmeasured repetitions first (default 1)");
  p.add_flag(
      "--stream", &o.stream,
      "also measure the DRAM read stream on the decode CPUs between the decode repetitions and "
      "report the bytes the decode test reads per second as a fraction of it");
  p.add("--decode-batch", &o.decode_batches_text,
        "sequences decoded together in the generation test, comma-separated: a test each, "
        "tokens/s of the whole batch (default 1; with --counters 1,4,16)",
        "LIST");
  p.add_flag("--counters", &o.counters,
             "read hardware counters (perf_event_open) over each test's repetitions, in every "
             "thread and rank process: IPC, LLC misses and memory-bus accesses per "
             "kilo-instruction; a counter this machine does not give (no PMU, "
             "kernel.perf_event_paranoid) is named with the reason and the run goes on");
  p.add("--json", &o.json_path, "also write the results as JSON to this file", "F");
  p.add("--configs", &o.configs_text,
        "service configurations to compare, comma-separated: RxT for both phases or "
        "PREFILL/DECODE, e.g. "
        "1x2,2x1,1x2/2x1 (instead of --plan, --prefill-config and --decode-config; one under "
        "--pipeline-parallel)",
        "LIST");
}

}  // namespace

int bench_engine_main(int argc, char** argv, int first_arg) {
  // Nothing to drain: a signal stops the run, with one line (ranks go with the program).
  stop_on_signal(kProgram, "benchmarking the engine");
  return run_tool(kProgram, [&] {
    EngineBenchOptions o;
    ArgParser p(
        kProgram,
        "Prefill (pp) and decode (tg) tokens/s of the engine, as llama-bench reports them.");
    add_engine_bench_options(p, o);
    PipelineOptions pipeline;
    add_pipeline_options(p, pipeline);
    if (!p.parse(argc, argv, first_arg)) return 0;
    const ResolvedPlan plan = pipeline.stages > 1 ? engine_bench_pipeline_plan(o) : ResolvedPlan{};
    PipelineTool pipe(pipeline, kProgram);
    if (pipe.worker()) {
      LoadOptions load = o.load;
      load.threads = o.plan.threads;
      load.require_tokenizer = false;
      return pipe.serve(load, plan);
    }
    pipe.choose_layers(o.load);
    o.executor_factory = pipe.executor_factory(plan.plan);
    run_engine_bench(o);
    return 0;
  });
}

}  // namespace sandwich
