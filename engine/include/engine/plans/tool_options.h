#pragma once
// The options every tool that runs a model shares: which model and how to load it (--model,
// --tokenizer, --load-format, --dtype, --weights-seed), and how to run it (--threads, --plan,
// --plan-mismatch, --prefill-config, --decode-config, --batch-invariant, --schedules, and the
// paper's ablation switches --allreduce, --no-split-k, --same-config), and the KV cache's
// element type (--kv-cache-dtype).
#include <filesystem>
#include <optional>
#include <string>

#include "common/cli.h"
#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/plans/plan_check.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"

namespace sandwich::engine {

void add_model_options(ArgParser& p, LoadOptions& o);
// --kv-cache-dtype auto|bfloat16|bf16|float32|f32|fp32 (vLLM's spelling; auto is bf16).
void add_kv_cache_dtype_option(ArgParser& p, KVCacheDType& dtype);

struct PlanOptions {
  int threads = 0;  // one rank of this many cores when no configuration is given (0: all)
  bool threads_given = false;  // --threads was on the command line
  std::optional<std::string> plan, prefill_config, decode_config;
  PlanMismatch plan_mismatch = PlanMismatch::Error;  // --plan-mismatch
  bool batch_invariant = false;  // --batch-invariant: ExecutorLimits::batch_invariant
  std::optional<std::filesystem::path> schedules;  // --schedules: a tuned-schedule table
  AblationSwitches ablation;                       // --allreduce, --no-split-k
  // --same-config: decode runs the prefill configuration (the paper's "w/o separate plans").
  bool same_config = false;
};
void add_plan_options(ArgParser& p, PlanOptions& o);
// "all-reduce rank-shifted, split-k, a configuration per phase": every ablation switch, on or
// off, for the start-up lines and reports that must say which run was which.
std::string describe_switches(const PlanOptions& o);
// The configurations the options name: a phase's own option over the plan file over one rank
// of --threads cores; decode defaults to prefill's. The schedule table: --schedules over the
// plan file's. Throws CliError for a bad thread count and std::invalid_argument (naming the
// file or text) for a bad plan or configuration; with --plan-mismatch warn, a plan's
// configuration that does not parse here is a warning instead, and its phase runs the default.
// With --same-config, decode takes prefill's configuration, whatever gave the two (a tool that
// chooses default configurations afterwards keeps them equal: ResolvedPlan::same_config).
// Checked against the model by apply_plan (plan_check.h) once it has loaded.
ResolvedPlan resolve_plan(const PlanOptions& o);

}  // namespace sandwich::engine
