#include "runtime/engine_bench_report.h"

#include <algorithm>
#include <cstdio>
#include <optional>

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
                      {"reps", reps_},
                      {"tokens_per_second", {{"median", s.median}, {"min", s.min}, {"max", s.max}}},
                      {"samples", t.tokens_per_s}});
  if (!t.stream_gbs.empty()) results_.back()["reads"] = reads;
}

// The bytes a decode step reads: the weights once, and the KV cache over the positions attended
// to on average.
nlohmann::json EngineBenchReport::stream_reads(const TestSamples& t, const std::string& test,
                                               double median) {
  const topotree::ServiceConfig& sc = *t.config;
  const double weights = static_cast<double>(model_.decode_read_bytes());
  const double kv_bytes =
      static_cast<double>(KVCache::token_bytes(model_.config, kv_dtype_, model_.layers())) *
      (depth_ + (t.tokens + 1) / 2.0);
  const double step = weights + kv_bytes;
  const double stream_gbs = stats(t.stream_gbs).median;
  const double read_gbs = step * median / 1e9;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s %s: a step reads %.3f GB (weights %.3f, KV cache %.3f): %.2f GB/s, %.2f "
                "of the DRAM stream (%.2f GB/s on %d threads, median of %d between "
                "repetitions)",
                sc.to_string().c_str(), test.c_str(), step / 1e9, weights / 1e9, kv_bytes / 1e9,
                read_gbs, read_gbs / stream_gbs, stream_gbs, sc.total_threads(), reps_);
  stream_lines_.push_back(line);
  return {{"bytes_per_token", step},
          {"weight_bytes_per_token", weights},
          {"kv_bytes_per_token", kv_bytes},
          {"gb_per_s", read_gbs},
          {"stream_gb_per_s", stream_gbs},
          {"stream_samples", t.stream_gbs},
          {"fraction_of_stream", read_gbs / stream_gbs}};
}

void EngineBenchReport::finish(const AppliedPlan& applied, const PlanOptions& switches,
                               std::ostream* json) const {
  const bool batch_invariant = switches.batch_invariant;
  if (!stream_lines_.empty()) std::printf("\n");
  for (const auto& line : stream_lines_) std::printf("%s\n", line.c_str());
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
      {"results", results_}};
  *json << doc.dump(2) << "\n";
}

}  // namespace sandwich::engine
