#pragma once
// The engine benchmark's results as they come: a table row per test on stdout, as llama-bench
// prints them, and a result each in the JSON document; with --stream, the bytes a decode test
// reads per second against the DRAM stream, and with --counters the hardware counters' table,
// printed after the table.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/formats/model.h"
#include "engine/plans/plan_check.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/kv_cache.h"
#include "runtime/bench_counters.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

// One test under one configuration: tokens/s of each measured repetition (of all the batch's
// sequences together) and, for a decode test with --stream, the DRAM stream measured after each
// (GB/s); with --counters, the counters over its repetitions.
struct TestSamples {
  std::string configs;  // the configuration as given ("1x2" or "1x2/2x1")
  const topotree::ServiceConfig* config = nullptr;  // the phase's
  bool decode = false;
  int tokens = 0;
  int batch = 1;  // sequences decoded together
  std::vector<double> tokens_per_s, stream_gbs;
  std::optional<CounterFigures> counters;
  nlohmann::json counter_events;  // each counter's reading
};

class EngineBenchReport {
 public:
  EngineBenchReport(const Model& model, KVCacheDType kv_dtype, int depth, int reps);
  void print_header() const;
  void add(const TestSamples& t);
  // The stream lines and the counters' table (stdout), the load line (stderr) and the JSON
  // document to `json`, if given; both say how the run's switches were set (batch-invariant,
  // the ablations).
  void finish(const AppliedPlan& applied, const PlanOptions& switches,
              const BenchCounters* counters, std::ostream* json) const;

 private:
  nlohmann::json stream_reads(const TestSamples& t, const std::string& test, double median);
  void add_counters(const TestSamples& t, const std::string& test);
  void print_counters(const BenchCounters& counters) const;

  const Model& model_;
  KVCacheDType kv_dtype_;
  int depth_, reps_;
  nlohmann::json results_ = nlohmann::json::array();
  std::vector<std::string> stream_lines_, counter_rows_;
};

}  // namespace sandwich::engine
