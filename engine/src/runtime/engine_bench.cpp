#include "engine/runtime/engine_bench.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/cli.h"
#include "engine/plans/plan.h"
#include "engine/plans/plan_check.h"
#include "engine/runtime/executor.h"
#include "runtime/bench_counters.h"
#include "runtime/decode_stream.h"
#include "runtime/engine_bench_report.h"
#include "runtime/throughput_tests.h"
#include "topotree/service_config.h"

namespace sandwich::engine {
namespace {

constexpr const char* kProgram = "sandwich-bench engine";

// A configuration to compare: as given, and its two phases'.
struct NamedConfigs {
  std::string name;
  topotree::ServiceConfig prefill, decode;
};

// Everything the command line decides, checked before the model loads (which can take minutes).
void check_options(const EngineBenchOptions& o) {
  if (o.load.model.empty()) throw CliError("--model is required (see --help)");
  if (o.prompt_tokens < 0 || o.gen_tokens < 0 || o.warmup < 0 || o.depth < 0)
    throw CliError("--prompt-tokens, --gen-tokens, --depth and --warmup must be >= 0");
  if (o.reps < 1) throw CliError("--reps must be at least 1");
  if (o.prompt_tokens == 0 && o.gen_tokens == 0)
    throw CliError("nothing to do: --prompt-tokens and --gen-tokens are both 0");
  if (o.configs_text && (o.plan.plan || o.plan.prefill_config || o.plan.decode_config))
    throw CliError("give --configs or --plan/--prefill-config/--decode-config, not both");
}

// --decode-batch: the decode test's batch sizes, in order.
std::vector<int> decode_batches(const EngineBenchOptions& o) {
  if (!o.decode_batches_text) return o.counters ? std::vector<int>{1, 4, 16} : std::vector<int>{1};
  const std::string& text = *o.decode_batches_text;
  std::vector<int> batches;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int b = 0;
    try {
      b = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || b < 1 || b > 1024)
      throw CliError(
          "--decode-batch takes batch sizes from 1 to 1024, comma-separated (e.g. "
          "1,4,16), got '" +
          text + "'");
    batches.push_back(b);
  }
  if (batches.empty()) throw CliError("--decode-batch needs at least one batch size, e.g. 1,4,16");
  return batches;
}

// --configs: RxT for both phases, or PREFILL/DECODE.
std::vector<NamedConfigs> parse_configs(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) throw CliError("--configs has an empty item: '" + text + "'");
    items.push_back(item);
  }
  if (items.empty())
    throw CliError("--configs needs at least one configuration, e.g. 1x2 or 1x2/2x1");
  std::vector<NamedConfigs> configs;
  for (const auto& item : items) {
    const size_t slash = item.find('/');
    try {
      const topotree::ServiceConfig pc = topotree::parse_service_config(item.substr(0, slash));
      const topotree::ServiceConfig dc =
          slash == std::string::npos ? pc : topotree::parse_service_config(item.substr(slash + 1));
      configs.push_back({item, pc, dc});
    } catch (const std::invalid_argument& e) {
      throw CliError("--configs: " + std::string(e.what()));
    }
  }
  return configs;
}

// As sandwichd and sandwich-generate run: the plan options, else one rank of --threads.
std::vector<NamedConfigs> configs_of(const Plan& one) {
  const std::string name = one.prefill == one.decode
                               ? one.prefill.to_string(2)
                               : one.prefill.to_string(2) + "/" + one.decode.to_string(2);
  return {{name, one.prefill, one.decode}};
}

// A configuration's executors, all made before any measurement (rank processes fork here).
struct Setup {
  std::string name;
  std::unique_ptr<Executor> prefill, decode;
};

// One test: its warm-up, then its repetitions; with a probe (a decode test with --stream), the
// DRAM stream on the test's CPUs after each repetition. The counters count the repetitions only
// (not the warm-up, not the stream).
void measure(TestSamples& t, const std::function<double()>& once, const EngineBenchOptions& o,
             DecodeStream* probe, BenchCounters* counters) {
  for (int i = 0; i < o.warmup; ++i) once();
  if (counters) counters->begin_test();
  for (int i = 0; i < o.reps; ++i) {
    if (counters) counters->resume();
    t.tokens_per_s.push_back(once());
    if (counters) counters->pause();
    if (probe) t.stream_gbs.push_back(probe->gbs());
  }
  if (counters) {
    t.counters = counters->end_test();
    t.counter_events = counters->last_test_json();
  }
}

void run_tests(const EngineBenchOptions& o, const Model& model, std::vector<Setup>& setups,
               ThroughputTests& tests, EngineBenchReport& report, BenchCounters* counters) {
  for (auto& setup : setups) {
    if (o.prompt_tokens > 0) {
      TestSamples pp{setup.name, &setup.prefill->config(), false, o.prompt_tokens};
      const auto once = [&] { return tests.prefill(*setup.prefill); };
      measure(pp, once, o, nullptr, counters);
      report.add(pp);
    }
    if (o.gen_tokens == 0) continue;
    // One buffer for the decode tests of a configuration (its first touch takes a while): over
    // at least the bytes a step reads.
    std::optional<DecodeStream> probe;
    if (o.stream) probe.emplace(setup.decode->config(), model.decode_read_bytes());
    for (int batch : decode_batches(o)) {
      TestSamples tg{setup.name, &setup.decode->config(), true, o.gen_tokens};
      tg.batch = batch;
      tests.prepare_decode(*setup.prefill, batch);
      const auto once = [&] { return tests.decode(*setup.prefill, *setup.decode, batch); };
      measure(tg, once, o, probe ? &*probe : nullptr, counters);
      report.add(tg);
    }
  }
}

ResolvedPlan resolve(const EngineBenchOptions& o) {
  try {
    return resolve_plan(o.plan);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
}

// In a pipeline (one_pair), its workers serve one pair.
std::vector<NamedConfigs> configs_to_run(const EngineBenchOptions& o, const ResolvedPlan& r,
                                         bool one_pair) {
  std::vector<NamedConfigs> configs =
      o.configs_text ? parse_configs(*o.configs_text) : configs_of(r.plan);
  if (o.plan.same_config)
    for (NamedConfigs& nc : configs) nc.decode = nc.prefill;
  if (one_pair && configs.size() > 1)
    throw CliError(
        "--configs: under --pipeline-parallel the nodes run one configuration pair, "
        "got " +
        std::to_string(configs.size()) + " (" + *o.configs_text + ")");
  return configs;
}

}  // namespace

ResolvedPlan engine_bench_pipeline_plan(const EngineBenchOptions& o) {
  check_options(o);
  ResolvedPlan r = resolve(o);
  const NamedConfigs one = configs_to_run(o, r, true).front();
  r.plan.prefill = one.prefill;
  r.plan.decode = one.decode;
  return r;
}

void run_engine_bench(EngineBenchOptions o) {
  check_options(o);
  const std::vector<int> batches = decode_batches(o);
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  o.load.threads = o.plan.threads;
  o.load.require_tokenizer = false;
  const ResolvedPlan resolved = resolve(o);
  const std::vector<NamedConfigs> configs =
      configs_to_run(o, resolved, o.executor_factory != nullptr);
  // Opened before the benchmark runs, so that a path that cannot be written fails at once.
  std::optional<std::ofstream> json_out;
  if (o.json_path) {
    json_out.emplace(*o.json_path);
    if (!*json_out) throw CliError("cannot write --json file " + *o.json_path);
  }

  // Before any thread or rank process of the run exists, so that each inherits the counters.
  std::optional<BenchCounters> counters;
  if (o.counters) {
    counters.emplace();
    if (!counters->unavailable().empty())
      std::cerr << kProgram << ": counters: " << counters->unavailable().size()
                << " unavailable here, each said after the results; the benchmark goes on\n";
  }

  auto model = load_model(o.load);
  const ModelConfig& c = model->config;
  if (std::max(o.prompt_tokens, o.depth + o.gen_tokens) > c.max_seq_len)
    throw CliError("the test lengths exceed the model's context of " +
                   std::to_string(c.max_seq_len));
  for (const auto& n : model->notes) std::cerr << "note: " << n << "\n";
  // Before any executor: rank processes inherit the installed table.
  const AppliedPlan applied = apply_plan(resolved, *model, o.load.model, kProgram, std::cerr);
  if (o.configs_text)
    std::cerr << kProgram << ": configs " << *o.configs_text
              << (o.plan.same_config ? " (--same-config: decode runs each prefill configuration)"
                                     : "")
              << "; " << applied.schedules << "\n";
  else
    std::cerr << kProgram << ": " << applied.line << "\n";

  // Room for the prefill test and, beside it, each decode sequence's context.
  // A pipeline stage's cache holds its own layers.
  const LayerRange layers = model->layers();
  KVCache kv(
      c,
      KVCache::bytes_for_tokens(c, o.prompt_tokens, o.kv_dtype, layers) +
          max_batch * KVCache::bytes_for_tokens(c, o.depth + o.gen_tokens, o.kv_dtype, layers),
      o.kv_dtype, layers);
  std::cerr << kProgram << ": kv cache " << kv.describe() << "\n";
  ExecutorLimits limits;
  limits.max_tokens = std::max({o.prompt_tokens, std::min(o.depth, 512), max_batch});
  limits.max_entries = max_batch;
  limits.batch_invariant = o.plan.batch_invariant;
  limits.ablation = o.plan.ablation;
  std::vector<Setup> setups;
  const ExecutorFactory make = o.executor_factory ? o.executor_factory : make_executor;
  for (const NamedConfigs& nc : configs) {
    Setup setup{nc.name, nullptr, nullptr};
    // Named, so that a pipeline's nodes run a step under its phase's configuration.
    limits.role = "prefill";
    setup.prefill = make(*model, kv, nc.prefill, limits);
    limits.role = "decode";
    setup.decode = make(*model, kv, nc.decode, limits);
    setups.push_back(std::move(setup));
  }
  ThroughputTests tests(*model, kv, o.prompt_tokens, o.gen_tokens, o.depth, limits.max_tokens);
  EngineBenchReport report(*model, o.kv_dtype, o.depth, o.reps);
  report.print_header();
  run_tests(o, *model, setups, tests, report, counters ? &*counters : nullptr);
  report.finish(applied, o.plan, counters ? &*counters : nullptr, json_out ? &*json_out : nullptr);
  if (json_out && !json_out->flush()) throw CliError("cannot write --json file " + *o.json_path);
}

}  // namespace sandwich::engine
