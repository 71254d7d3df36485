#include "engine/plans/tool_options.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace sandwich::engine {

void add_model_options(ArgParser& p, LoadOptions& o) {
  p.add("-m,--model", &o.model,
        "model: a GGUF file, a Hugging Face folder, a llama2.c .bin, or a preset name "
        "(llama-160m, llama-1.3b, llama3-8b) looked up under $SANDWICH_MODELS",
        "M");
  p.option("--tokenizer", "T", "tokenizer file or folder (default: the model's own)",
           [&o](const std::string& v) { o.tokenizer = v; });
  p.option("--load-format", "F", "auto (default) or dummy: random weights with the model's shapes",
           [&o](const std::string& v) {
             const auto f = value_named(v, kLoadFormatNames);
             if (!f) throw CliError("--load-format must be auto or dummy, got '" + v + "'");
             o.load_format = *f;
           });
  p.option("--dtype", "D", "weight storage: auto (default), float32 or bfloat16",
           [&o](const std::string& v) {
             const auto d = value_named(v, kWeightDTypeNames);
             if (!d) throw CliError("--dtype must be auto, float32 or bfloat16, got '" + v + "'");
             o.dtype = *d;
           });
  p.option("--weights-seed", "N", "seed of dummy weights (default 0)", [&o](const std::string& v) {
    const int64_t seed = ArgParser::parse_int("--weights-seed", v);
    if (seed < 0) throw CliError("--weights-seed must not be negative");
    o.seed = static_cast<uint64_t>(seed);
  });
}

void add_kv_cache_dtype_option(ArgParser& p, KVCacheDType& dtype) {
  p.option("--kv-cache-dtype", "D",
           "KV cache elements: auto (default: bfloat16), bfloat16 (bf16) or float32 (f32, fp32; "
           "twice the memory)",
           [&dtype](const std::string& v) {
             const auto d = value_named(v, kKVCacheDTypeNames);
             if (!d)
               throw CliError(
                   "--kv-cache-dtype must be auto, bfloat16, bf16, float32, f32 or fp32, got '" +
                   v + "'");
             dtype = *d;
           });
}

void add_plan_options(ArgParser& p, PlanOptions& o) {
  p.option("-t,--threads", "N",
           "compute threads of one rank when no configuration is given (default: all cores; "
           "sandwichd: the latency simulator's choice)",
           [&o](const std::string& v) {
             o.threads = static_cast<int>(
                 std::clamp<int64_t>(ArgParser::parse_int("--threads", v), -(1 << 30), 1 << 30));
             o.threads_given = true;
           });
  p.add("--plan", &o.plan,
        "plan file (sandwich-tune plan): the prefill and decode configurations and kernel table",
        "F");
  p.option("--plan-mismatch", "M",
           "a plan made for another model or machine: error (default) refuses it, warn runs what "
           "still fits",
           [&o](const std::string& v) {
             const auto m = value_named(v, kPlanMismatchNames);
             if (!m) throw CliError("--plan-mismatch must be error or warn, got '" + v + "'");
             o.plan_mismatch = *m;
           });
  p.add("--prefill-config", &o.prefill_config,
        "service configuration of prefill: RxT (R ranks of T cores) or JSON", "C");
  p.add("--decode-config", &o.decode_config, "service configuration of decode: RxT or JSON", "C");
  p.add_flag("--batch-invariant", &o.batch_invariant,
             "sum in an order independent of the batch: a request's greedy output and logprobs "
             "do not depend on what runs beside it (slower; see the README)");
  p.option("--allreduce", "A",
           "all-reduce of tensor-parallel ranks: rank-shifted (default) or naive (the ablation's "
           "baseline: the ranks add into one shared buffer in turn)",
           [&o](const std::string& v) {
             const auto a = value_named(v, kAllReduceAlgorithmNames);
             if (!a)
               throw CliError("--allreduce must be " + names_of(kAllReduceAlgorithmNames) +
                              ", got '" + v + "'");
             o.ablation.allreduce = *a;
           });
  p.add_flag("--no-split-k", &o.ablation.no_split_k,
             "GEMMs never split K across threads: a schedule's K threads go to N or M instead "
             "(ablation)");
  p.add_flag("--same-config", &o.same_config,
             "one service configuration for both phases: decode runs the prefill one (of a plan, "
             "--prefill-config or the default; ablation)");
  p.option("--schedules", "F",
           "tuned GEMM schedules (sandwich-tune kernels); the cost model's for what it lacks",
           [&o](const std::string& v) {
             if (v.empty()) throw CliError("--schedules needs a file");
             o.schedules = v;
           });
}

ResolvedPlan resolve_plan(const PlanOptions& o) {
  try {
    resolve_threads(o.threads, "--threads");
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  ResolvedPlan r;
  r.mismatch = o.plan_mismatch;
  std::vector<std::string> unparsed;
  std::error_code ec;
  if (o.plan && !std::filesystem::exists(*o.plan, ec))
    throw std::invalid_argument("--plan " + *o.plan + ": no such file");
  if (o.plan)
    r.plan = load_plan(*o.plan, o.plan_mismatch == PlanMismatch::Warn ? &unparsed : nullptr);
  for (const auto& u : unparsed) r.warnings.push_back(u + "; that phase runs the default");
  Plan& p = r.plan;
  const bool plan_prefill = !p.prefill.ranks.empty(), plan_decode = !p.decode.ranks.empty();
  r.prefill_default = !o.prefill_config && !plan_prefill;
  p.prefill = o.prefill_config ? topotree::parse_service_config(*o.prefill_config)
              : plan_prefill   ? p.prefill
                               : single_rank_config(o.threads);
  r.decode_default = !o.decode_config && !plan_decode && r.prefill_default;
  p.decode = o.decode_config ? topotree::parse_service_config(*o.decode_config)
             : plan_decode   ? p.decode
                             : p.prefill;
  if (o.same_config) {
    p.decode = p.prefill;
    r.decode_default = r.prefill_default;
    r.same_config = true;
  }
  r.table_from_plan = !o.schedules && (p.schedules || p.inline_schedules);
  if (o.schedules) {
    p.schedules = o.schedules;
    p.inline_schedules.reset();
  }
  return r;
}

std::string describe_switches(const PlanOptions& o) {
  return o.ablation.describe() +
         (o.same_config ? ", one configuration for both phases" : ", a configuration per phase");
}

}  // namespace sandwich::engine
