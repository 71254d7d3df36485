#include "runtime/engine_bench_report.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace sandwich::engine {
namespace {

struct Stats {
  double median, min, max;
};

std::string figure(const std::optional<double>& v, const char* format) {
  if (!v) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, format, *v);
  return text;
}

nlohmann::json json_figure(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {med, v.front(), v.back()};
}

}  // namespace

EngineBenchReport::EngineBenchReport(const Model& model, KVCacheDType kv_dtype, int depth, int reps)
    : model_(model), kv_dtype_(kv_dtype), depth_(depth), reps_(reps) {}

void EngineBenchReport::print_header() const {
  std::printf("| model | dtype | params | config | test | t/s (median) | min | max |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

void EngineBenchReport::add(const TestSamples& t) {
  const ModelConfig& c = model_.config;
  const Stats s = stats(t.tokens_per_s);
  std::string test = std::string(t.decode ? "tg" : "pp") + std::to_string(t.tokens);
  if (t.decode && t.batch > 1) test += " b" + std::to_string(t.batch);
  if (t.decode && depth_ > 0) test += " @ d" + std::to_string(depth_);
  const topotree::ServiceConfig& sc = *t.config;
  std::printf("| %s | %s | %.2fB | %s | %s | %.2f | %.2f | %.2f |\n", c.name.c_str(),
              model_.main_weight_type.c_str(), c.param_count() / 1e9, sc.to_string().c_str(),
              test.c_str(), s.median, s.min, s.max);
  const nlohmann::json reads =
      t.stream_gbs.empty() ? nlohmann::json(nullptr) : stream_reads(t, test, s.median);
  std::fflush(stdout);
  results_.push_back({{"model", c.name},
                      {"source", model_.source},
                      {"dtype", model_.main_weight_type},
                      {"configs", t.configs},
                      {"config", sc.to_json()},
                      {"test", test},
                      {"tokens", t.tokens},
                      {"depth", t.decode ? depth_ : 0},
                      {"batch", t.batch},
                      {"reps", reps_},
                      {"tokens_per_second", {{"median", s.median}, {"min", s.min}, {"max", s.max}}},
                      {"samples", t.tokens_per_s}});
  if (!t.stream_gbs.empty()) results_.back()["reads"] = reads;
  if (t.counters) add_counters(t, test);
}

void EngineBenchReport::add_counters(const TestSamples& t, const std::string& test) {
  const CounterFigures& f = *t.counters;
  const std::optional<double> switches_per_s =
      f.context_switches && f.wall_seconds > 0
          ? std::optional<double>(*f.context_switches / f.wall_seconds)
          : std::nullopt;
  counter_rows_.push_back("| " + t.config->to_string() + " | " + test + " | " +
                          figure(f.ipc, "%.2f") + " | " + figure(f.llc_mpki, "%.2f") + " | " +
                          figure(f.bus_pki, "%.2f") + " | " + figure(f.running_fraction, "%.2f") +
                          " | " + figure(f.cpus_busy, "%.2f") + " | " +
                          figure(switches_per_s, "%.0f") + " |");
  results_.back()["counters"] = {{"ipc", json_figure(f.ipc)},
                                 {"llc_mpki", json_figure(f.llc_mpki)},
                                 {"bus_pki", json_figure(f.bus_pki)},
                                 {"running_fraction", f.running_fraction},
                                 {"cpus_busy", json_figure(f.cpus_busy)},
                                 {"context_switches", json_figure(f.context_switches)},
                                 {"seconds", f.wall_seconds},
                                 {"events", t.counter_events}};
}

// The bytes a decode step reads: the weights once, and each sequence's KV cache over the
// positions attended to on average; per token, a step's bytes over the batch's sequences.
nlohmann::json EngineBenchReport::stream_reads(const TestSamples& t, const std::string& test,
                                               double median) {
  const topotree::ServiceConfig& sc = *t.config;
  const double weights = static_cast<double>(model_.decode_read_bytes());
  const double kv_bytes =
      static_cast<double>(KVCache::token_bytes(model_.config, kv_dtype_, model_.layers())) *
      (depth_ + (t.tokens + 1) / 2.0);
  const double step = weights + kv_bytes * t.batch;
  const double stream_gbs = stats(t.stream_gbs).median;
  const double read_gbs = step / t.batch * median / 1e9;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s %s: a step reads %.3f GB (weights %.3f, KV cache %.3f): %.2f GB/s, %.2f "
                "of the DRAM stream (%.2f GB/s on %d threads, median of %d between "
                "repetitions)",
                sc.to_string().c_str(), test.c_str(), step / 1e9, weights / 1e9,
                kv_bytes * t.batch / 1e9, read_gbs, read_gbs / stream_gbs, stream_gbs,
                sc.total_threads(), reps_);
  stream_lines_.push_back(line);
  return {{"bytes_per_token", step / t.batch},
          {"bytes_per_step", step},
          {"weight_bytes_per_token", weights / t.batch},
          {"kv_bytes_per_token", kv_bytes},
          {"gb_per_s", read_gbs},
          {"stream_gb_per_s", stream_gbs},
          {"stream_samples", t.stream_gbs},
          {"fraction_of_stream", read_gbs / stream_gbs}};
}

void EngineBenchReport::finish(const AppliedPlan& applied, const PlanOptions& switches,
                               const BenchCounters* counters, std::ostream* json) const {
  const bool batch_invariant = switches.batch_invariant;
  if (!stream_lines_.empty()) std::printf("\n");
  for (const auto& line : stream_lines_) std::printf("%s\n", line.c_str());
  if (counters) print_counters(*counters);
  const std::optional<std::string>& schedules = applied.table;
  const std::string tuned = schedules ? ", schedules " + *schedules + " (" +
                                            std::to_string(applied.schedule_ranges) + " ranges)"
                                      : "";
  // A pipeline stage says which share it holds.
  const std::string share = model_.whole() ? "" : " (" + model_.layers_text() + ")";
  std::fprintf(stderr, "\nload: %.2f s, weights %s%s%s%s; %s\n", model_.load_seconds,
               model_.weight_types.c_str(), share.c_str(),
               batch_invariant ? ", batch-invariant" : "", tuned.c_str(),
               describe_switches(switches).c_str());
  if (!json) return;
  const nlohmann::json doc = {
      {"load_seconds", model_.load_seconds},
      {"batch_invariant", batch_invariant},
      {"allreduce", std::string(name_of(switches.ablation.allreduce, kAllReduceAlgorithmNames))},
      {"no_split_k", switches.ablation.no_split_k},
      {"same_config", switches.same_config},
      {"schedules", schedules ? nlohmann::json(*schedules) : nlohmann::json(nullptr)},
      {"schedule_ranges", applied.schedule_ranges},
      {"kv_cache",
       {{"dtype", std::string(kv_cache_dtype_name(kv_dtype_))},
        {"bytes_per_token", KVCache::token_bytes(model_.config, kv_dtype_, model_.layers())}}},
      {"counters", counters ? counters->describe() : nlohmann::json(nullptr)},
      {"results", results_}};
  *json << doc.dump(2) << "\n";
}

// Per kilo-instruction figures, over the measured repetitions; "counted" is the least time
// running / enabled of the test's counters (below 1: the kernel multiplexed them and the counts
// are scaled up).
void EngineBenchReport::print_counters(const BenchCounters& counters) const {
  std::printf(
      "\nhardware counters over the measured repetitions (user space of this process and every "
      "thread and rank process it started)\nbus: %s\n",
      counters.bus_source().c_str());
  std::printf(
      "| config | test | IPC | LLC MPKI | bus PKI | counted | CPUs busy | ctx-sw/s |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& row : counter_rows_) std::printf("%s\n", row.c_str());
  for (const auto& line : counters.unavailable()) std::printf("counter %s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace sandwich::engine
