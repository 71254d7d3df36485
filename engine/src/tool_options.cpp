#include "engine/tool_options.h"

#include <stdexcept>

namespace sandwich {

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

void add_plan_options(ArgParser& p, PlanOptions& o) {
  p.add("-t,--threads", &o.threads,
        "compute threads of one rank when no configuration is given (default: all cores)");
  p.add("--plan", &o.plan, "plan file holding the prefill and decode configurations", "F");
  p.add("--prefill-config", &o.prefill_config,
        "service configuration of prefill: RxT (R ranks of T cores) or JSON", "C");
  p.add("--decode-config", &o.decode_config, "service configuration of decode: RxT or JSON", "C");
  p.add_flag("--batch-invariant", &o.batch_invariant,
             "sum in an order independent of the batch: a request's greedy output and logprobs "
             "do not depend on what runs beside it (slower; see the README)");
  p.option("--schedules", "F",
           "tuned GEMM schedules (sandwich-tune kernels); the cost model's for what it lacks",
           [&o](const std::string& v) {
             if (v.empty()) throw CliError("--schedules needs a file");
             o.schedules = v;
           });
}

Plan resolve_plan(const PlanOptions& o) {
  try {
    resolve_threads(o.threads, "--threads");
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  std::optional<Plan> file;
  if (o.plan) file = load_plan(*o.plan);
  Plan p;
  p.prefill = o.prefill_config ? topo::parse_service_config(*o.prefill_config)
              : file           ? file->prefill
                               : single_rank_config(o.threads);
  p.decode = o.decode_config ? topo::parse_service_config(*o.decode_config)
             : file          ? file->decode
                             : p.prefill;
  p.schedules = o.schedules ? o.schedules : file ? file->schedules : std::nullopt;
  return p;
}

}  // namespace sandwich
