#pragma once
// The engine's own benchmark (`sandwich-bench engine`): prefill and decode throughput measured
// the way llama-bench measures pp (a prompt of N tokens in one batch) and tg (M single-token
// decode steps), so the two tools' figures compare directly on the same GGUF file.
#include <optional>
#include <string>

#include "engine/formats/model.h"
#include "engine/plans/plan_check.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::engine {

struct EngineBenchOptions {
  LoadOptions load;
  PlanOptions plan;
  KVCacheDType kv_dtype = kDefaultKVCacheDType;
  int prompt_tokens = 512;  // the prefill test's prompt (0: no prefill test)
  int gen_tokens = 128;     // the decode test's steps (0: no decode test)
  int depth = 0;            // positions in the KV cache before the decode test (llama-bench's -d)
  int reps = 3;             // measured repetitions
  int warmup = 1;           // unmeasured repetitions first
  // Also measure the DRAM read stream on the decode CPUs between the decode repetitions.
  bool stream = false;
  // Sequences decoded together in the decode test, comma-separated ("1,4,16": a test each);
  // unset: 1, or 1,4,16 with `counters`.
  std::optional<std::string> decode_batches_text;
  // Read hardware counters (perf_event_open) around each test: IPC, LLC misses and memory-bus
  // accesses per kilo-instruction. Counters the machine does not give are reported, not fatal.
  bool counters = false;
  std::optional<std::string> json_path;  // also write the results as JSON here
  // Configurations to compare, comma-separated, each RxT or PREFILL/DECODE (instead of the plan
  // options).
  std::optional<std::string> configs_text;
  // Makes the executors (a pipeline's head: PipelineTool::executor_factory; it then runs one
  // configuration pair only); null = make_executor.
  ExecutorFactory executor_factory;
};

// The one configuration pair a pipeline's nodes run: the plan options' or, with --configs, its
// single item, in the plan the options resolve to. Checks the options as run_engine_bench does;
// CliError for --configs of several (the workers serve one pair).
ResolvedPlan engine_bench_pipeline_plan(const EngineBenchOptions& o);

// Checks every option (CliError naming the option) before the model loads, then loads it and
// runs the tests under each configuration: a table row per test on stdout, the log on stderr,
// and the JSON document in json_path.
void run_engine_bench(EngineBenchOptions options);

}  // namespace sandwich::engine
