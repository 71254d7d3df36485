// sandwich-bench engine (this program, sandwich-bench-engine, which sandwich-bench runs for it):
// prefill and decode throughput of the engine itself, measured the way
// llama-bench measures pp (a prompt of N tokens in one batch) and tg (M single-token decode
// steps), so the two tools' figures compare directly on the same GGUF file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/tool.h"
#include "engine/plans/plan.h"
#include "engine/plans/schedule_table.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/batch_entry.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/sampler.h"
#include "kernels/peak_probes.h"
#include "kernels/thread_team.h"

namespace sandwich::engine {
namespace {

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {med, v.front(), v.back()};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The DRAM read stream on a decode configuration's CPUs, measured between the decode test's
// repetitions so that both see the same machine: the ceiling a decode step, which reads every
// weight once, is held to. Reads a buffer of at least the bytes one step reads (and 1 GiB, well
// past any cache), every thread its share, as the calibration's stream probe does.
class DecodeStream {
 public:
  DecodeStream(const topotree::ServiceConfig& config, size_t step_bytes)
      : team_(std::max(1, config.total_threads()), cpus_of(config)),
        bytes_(round_up(std::max<size_t>(step_bytes, size_t{1} << 30),
                        256 * static_cast<size_t>(team_.size()))),
        buf_(static_cast<char*>(std::aligned_alloc(4096, bytes_))) {
    if (!buf_) throw std::runtime_error("no memory for the --stream buffer");
    // First touch on the team's threads: the pages land where the decode threads run.
    team_.parallel_for(static_cast<int64_t>(bytes_ / 4096), [&](int64_t b, int64_t e, int) {
      std::memset(buf_.get() + b * 4096, 1, static_cast<size_t>(e - b) * 4096);
    });
  }
  double gbs() {
    const size_t share = bytes_ / static_cast<size_t>(team_.size());
    uint64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    team_.run([&](int tid, int) {
      const uint64_t x = kernels::stream_read(buf_.get() + share * static_cast<size_t>(tid), share);
      if (x == 42) sink += x;  // keeps the reads
    });
    const double s = seconds_since(t0);
    return sink == 1 ? 0 : static_cast<double>(bytes_) / s / 1e9;
  }

 private:
  static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }
  static std::vector<int> cpus_of(const topotree::ServiceConfig& c) {
    std::vector<int> cpus;
    for (const auto& r : c.ranks) cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
    return cpus;
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  kernels::ThreadTeam team_;
  size_t bytes_;
  std::unique_ptr<char, Free> buf_;
};

int bench_engine(int argc, char** argv) {
  LoadOptions load;
  int prompt_tokens = 512, gen_tokens = 128, depth = 0, reps = 3, warmup = 1;
  PlanOptions plan;
  std::optional<std::string> json_path, configs_text;
  bool stream = false;
  ArgParser p("sandwich-bench engine",
              "Prefill (pp) and decode (tg) tokens/s of the engine, as llama-bench reports them.");
  add_model_options(p, load);
  p.add("-p,--prompt-tokens", &prompt_tokens,
        "prompt length of the prefill test (default 512; 0 skips it)");
  p.add("-n,--gen-tokens", &gen_tokens,
        "decode steps of the generation test (default 128; 0 skips it)");
  p.add("-d,--depth", &depth,
        "positions already in the KV cache when the generation test starts, as llama-bench's "
        "--n-depth (default 0): decode at a long context");
  add_plan_options(p, plan);
  KVCacheDType kv_dtype = kDefaultKVCacheDType;
  add_kv_cache_dtype_option(p, kv_dtype);
  p.add("-r,--reps", &reps, "measured repetitions (default 3)");
  p.add("--warmup", &warmup, "unmeasured repetitions first (default 1)");
  p.add_flag(
      "--stream", &stream,
      "also measure the DRAM read stream on the decode CPUs between the decode repetitions and "
      "report the bytes the decode test reads per second as a fraction of it");
  p.add("--json", &json_path, "also write the results as JSON to this file", "F");
  p.add("--configs", &configs_text,
        "service configurations to compare, comma-separated: RxT for both phases or "
        "PREFILL/DECODE, e.g. "
        "1x2,2x1,1x2/2x1 (instead of --plan, --prefill-config and --decode-config)",
        "LIST");
  if (!p.parse(argc, argv)) return 0;
  // Everything the command line decides is checked before the model loads (which can take
  // minutes) and the results file is opened before the benchmark runs.
  if (load.model.empty()) throw CliError("--model is required (see --help)");
  if (prompt_tokens < 0 || gen_tokens < 0 || warmup < 0 || depth < 0)
    throw CliError("--prompt-tokens, --gen-tokens, --depth and --warmup must be >= 0");
  if (reps < 1) throw CliError("--reps must be at least 1");
  if (prompt_tokens == 0 && gen_tokens == 0)
    throw CliError("nothing to do: --prompt-tokens and --gen-tokens are both 0");
  if (configs_text && (plan.plan || plan.prefill_config || plan.decode_config))
    throw CliError("give --configs or --plan/--prefill-config/--decode-config, not both");
  load.threads = plan.threads;
  load.require_tokenizer = false;

  // Each item: RxT for both phases, or PREFILL/DECODE.
  std::vector<std::string> items;
  std::vector<std::pair<topotree::ServiceConfig, topotree::ServiceConfig>> configs;
  // As sandwichd and sandwich-generate run: the plan options, else one rank of --threads.
  ResolvedPlan resolved;
  try {
    resolved = resolve_plan(plan);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  if (configs_text) {
    std::stringstream ss(*configs_text);
    for (std::string item; std::getline(ss, item, ',');) {
      if (item.empty()) throw CliError("--configs has an empty item: '" + *configs_text + "'");
      items.push_back(item);
    }
    if (items.empty())
      throw CliError("--configs needs at least one configuration, e.g. 1x2 or 1x2/2x1");
    for (const auto& item : items) {
      const size_t slash = item.find('/');
      try {
        const topotree::ServiceConfig pc = topotree::parse_service_config(item.substr(0, slash));
        const topotree::ServiceConfig dc =
            slash == std::string::npos ? pc
                                       : topotree::parse_service_config(item.substr(slash + 1));
        configs.emplace_back(pc, dc);
      } catch (const std::invalid_argument& e) {
        throw CliError("--configs: " + std::string(e.what()));
      }
    }
  } else {
    const Plan& one = resolved.plan;
    items.push_back(one.prefill == one.decode
                        ? one.prefill.to_string(2)
                        : one.prefill.to_string(2) + "/" + one.decode.to_string(2));
    configs.emplace_back(one.prefill, one.decode);
  }
  std::optional<std::ofstream> json_out;
  if (json_path) {
    json_out.emplace(*json_path);
    if (!*json_out) throw CliError("cannot write --json file " + *json_path);
  }

  auto model = load_model(load);
  const ModelConfig& c = model->config;
  if (std::max(prompt_tokens, depth + gen_tokens) > c.max_seq_len)
    throw CliError("the test lengths exceed the model's context of " +
                   std::to_string(c.max_seq_len));
  for (const auto& n : model->notes) std::cerr << "note: " << n << "\n";
  // Before any executor: rank processes inherit the installed table.
  const AppliedPlan applied =
      apply_plan(resolved, *model, load.model, "sandwich-bench engine", std::cerr);
  if (configs_text)
    std::cerr << "sandwich-bench engine: configs " << *configs_text << "; " << applied.schedules
              << "\n";
  else
    std::cerr << "sandwich-bench engine: " << applied.line << "\n";
  const std::optional<std::string>& schedules = applied.table;
  const size_t schedule_ranges = applied.schedule_ranges;

  // Every configuration's executors start before any measurement (rank processes fork here).
  struct Setup {
    std::string name;
    std::unique_ptr<Executor> prefill, decode;
  };
  // Room for the prefill test and, beside it, the generation test's context.
  KVCache kv(c,
             KVCache::bytes_for_tokens(c, prompt_tokens, kv_dtype) +
                 KVCache::bytes_for_tokens(c, depth + gen_tokens, kv_dtype),
             kv_dtype);
  std::cerr << "sandwich-bench engine: kv cache " << kv.describe() << "\n";
  ExecutorLimits limits;
  limits.max_tokens = std::max({prompt_tokens, std::min(depth, 512), 1});
  limits.max_entries = 1;
  limits.batch_invariant = plan.batch_invariant;
  std::vector<Setup> setups;
  for (size_t i = 0; i < items.size(); ++i)
    setups.push_back({items[i], make_executor(*model, kv, configs[i].first, limits),
                      make_executor(*model, kv, configs[i].second, limits)});
  std::vector<float> logits(c.vocab_size);
  // Random ids stand in for a prompt: throughput does not depend on which tokens they are.
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt(prompt_tokens);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.vocab_size));

  Setup* cur = nullptr;
  auto run_pp = [&] {
    std::vector<int32_t> blocks;
    kv.reserve(blocks, prompt_tokens);
    const auto t0 = std::chrono::steady_clock::now();
    BatchEntry e{prompt, 0, blocks, true};
    cur->prefill->run({&e, 1}, logits.data());
    const double s = seconds_since(t0);
    kv.release(blocks);
    return prompt_tokens / s;
  };
  // The generation test's context: `depth` random tokens prefilled once (untimed, in chunks of
  // the prefill limit); every repetition decodes over them, rewriting the same later slots.
  std::vector<int32_t> tg_blocks;
  bool tg_context_filled = depth == 0;
  auto run_tg = [&] {
    if (tg_blocks.empty()) kv.reserve(tg_blocks, depth + gen_tokens);
    if (!tg_context_filled) {
      std::vector<int32_t> context(depth);
      for (auto& t : context) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.vocab_size));
      for (int i = 0; i < depth; i += limits.max_tokens) {
        const int n = std::min(limits.max_tokens, depth - i);
        BatchEntry e{std::span<const int32_t>(context.data() + i, n), i, tg_blocks, true};
        cur->prefill->run({&e, 1}, logits.data());
      }
      tg_context_filled = true;
    }
    int32_t tok = c.bos_id >= 0 ? c.bos_id : 1;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < gen_tokens; ++i) {
      BatchEntry e{std::span<const int32_t>(&tok, 1), depth + i, tg_blocks, true};
      cur->decode->run({&e, 1}, logits.data());
      tok = argmax(logits.data(), c.vocab_size);
    }
    const double s = seconds_since(t0);
    return gen_tokens / s;
  };

  nlohmann::json results = nlohmann::json::array();
  std::vector<std::string> stream_lines;
  std::printf("| model | dtype | params | config | test | t/s (median) | min | max |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  auto report = [&](const char* name, int n, const std::function<double()>& fn) {
    if (n == 0) return;
    for (int i = 0; i < warmup; ++i) fn();
    const bool decode_stream = stream && name[0] == 't';
    std::optional<DecodeStream> probe;
    if (decode_stream) probe.emplace(cur->decode->config(), model->decode_read_bytes());
    std::vector<double> v, gbs;
    for (int i = 0; i < reps; ++i) {
      v.push_back(fn());
      if (probe) gbs.push_back(probe->gbs());
    }
    const Stats s = stats(v);
    std::string test = std::string(name) + std::to_string(n);
    if (name[0] == 't' && depth > 0) test += " @ d" + std::to_string(depth);
    const topotree::ServiceConfig& sc =
        name[0] == 'p' ? cur->prefill->config() : cur->decode->config();
    std::printf("| %s | %s | %.2fB | %s | %s | %.2f | %.2f | %.2f |\n", c.name.c_str(),
                model->main_weight_type.c_str(), c.param_count() / 1e9, sc.to_string().c_str(),
                test.c_str(), s.median, s.min, s.max);
    nlohmann::json read = nullptr;
    if (probe) {
      // Weights once per step, and the KV cache over the positions attended to on average.
      const double weights = static_cast<double>(model->decode_read_bytes());
      const double kv_bytes =
          static_cast<double>(KVCache::token_bytes(c, kv.dtype())) * (depth + (n + 1) / 2.0);
      const double step = weights + kv_bytes;
      const double stream_gbs = stats(gbs).median;
      const double read_gbs = step * s.median / 1e9;
      char line[512];
      std::snprintf(line, sizeof line,
                    "%s %s: a step reads %.3f GB (weights %.3f, KV cache %.3f): %.2f GB/s, %.2f "
                    "of the DRAM stream (%.2f GB/s on %d threads, median of %d between "
                    "repetitions)",
                    sc.to_string().c_str(), test.c_str(), step / 1e9, weights / 1e9, kv_bytes / 1e9,
                    read_gbs, read_gbs / stream_gbs, stream_gbs, sc.total_threads(), reps);
      stream_lines.push_back(line);
      read = {{"bytes_per_token", step},
              {"weight_bytes_per_token", weights},
              {"kv_bytes_per_token", kv_bytes},
              {"gb_per_s", read_gbs},
              {"stream_gb_per_s", stream_gbs},
              {"stream_samples", gbs},
              {"fraction_of_stream", read_gbs / stream_gbs}};
    }
    std::fflush(stdout);
    results.push_back(
        {{"model", c.name},
         {"source", model->source},
         {"dtype", model->main_weight_type},
         {"configs", cur->name},
         {"config", sc.to_json()},
         {"test", test},
         {"tokens", n},
         {"depth", name[0] == 't' ? depth : 0},
         {"reps", reps},
         {"tokens_per_second", {{"median", s.median}, {"min", s.min}, {"max", s.max}}},
         {"samples", v}});
    if (probe) results.back()["reads"] = read;
  };
  for (auto& setup : setups) {
    cur = &setup;
    report("pp", prompt_tokens, run_pp);
    report("tg", gen_tokens, run_tg);
  }
  if (!stream_lines.empty()) std::printf("\n");
  for (const auto& line : stream_lines) std::printf("%s\n", line.c_str());
  const std::string tuned =
      schedules ? ", schedules " + *schedules + " (" + std::to_string(schedule_ranges) + " ranges)"
                : "";
  std::fprintf(stderr, "\nload: %.2f s, weights %s%s%s\n", model->load_seconds,
               model->weight_types.c_str(), plan.batch_invariant ? ", batch-invariant" : "",
               tuned.c_str());
  nlohmann::json doc = {
      {"load_seconds", model->load_seconds},
      {"batch_invariant", plan.batch_invariant},
      {"schedules", schedules ? nlohmann::json(*schedules) : nlohmann::json(nullptr)},
      {"schedule_ranges", schedule_ranges},
      {"kv_cache",
       {{"dtype", std::string(kv_cache_dtype_name(kv.dtype()))},
        {"bytes_per_token", KVCache::token_bytes(c, kv.dtype())}}},
      {"results", results}};
  if (json_out) {
    *json_out << doc.dump(2) << "\n";
    if (!json_out->flush()) throw CliError("cannot write --json file " + *json_path);
  }
  return 0;
}

}  // namespace
}  // namespace sandwich::engine

int main(int argc, char** argv) {
  return sandwich::run_tool("sandwich-bench engine",
                            [&] { return sandwich::engine::bench_engine(argc, argv); });
}
