#pragma once
// Tuning a whole schedule table: a list of GEMM shape keys (each tuned for M = 1..its own
// limit on its own rank's CPUs) and attention kernels, written as one table file that an
// interruption leaves resumable. `sandwich-tune kernels` tunes one service configuration's
// keys; `sandwich-tune plan` those of the chosen prefill and decode configurations together.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tuned_schedules.h"
#include "tuner/attention_tuning.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner {

struct GemmJob {
  kernels::GemmKey key;
  int64_t tune_m = 1;     // measured for M = 1..tune_m
  int64_t cover_m = 1;    // the table covers M = 1..cover_m: above tune_m the cost model's schedule
  std::vector<int> cpus;  // the rank's CPUs the measurements run on
};

struct AttentionJob {
  bool prefill = true;  // attention_prefill at M prompt tokens, else attention_decode at M seqs
  AttentionShape shape;
  int64_t max_m = 1;
  int32_t decode_context = 512;  // decode only
};

struct TableTuningSpec {
  // Recorded in the table and compared on resume (another value refuses to resume). dtype:
  // the weights' storage (Model::weight_storage: "bf16", or a quantized file's type counts).
  std::string model, config, dtype;
  int64_t max_m = 0;
  std::vector<GemmJob> gemms;  // distinct keys
  std::vector<AttentionJob> attention;
  GemmTunerOptions tuner;    // max_m is taken from each job
  ProfilerOptions profiler;  // cpus are taken from each job
};

struct TableTuningProgress {
  bool attention = false;
  int index = 0, count = 0;  // GEMM group i of n (1-based)
  std::string what;          // the group's key, or the attention kernel's name
  int64_t m = 0, max_m = 0;
  double best_gflops = 0;
  double fraction = 0;  // of the GEMM work done, 0..1 (an estimate)
};

struct TableTuningResult {
  enum class Status { Finished, Interrupted } status = Status::Finished;
  bool cut_short = false;  // out of time: the untuned M took the cost model's schedules
  int64_t untuned_m = 0;   // how many (key, M) points that was
  std::vector<GemmGroupResult> groups;
  TunerStats stats;  // summed over the GEMM tuners
  KernelSearchStats attention_stats;
  size_t attention_kernels = 0;
};

// Tunes `spec` into `out`. With `resume`, continues the interrupted table in `out` (refusing
// another machine, a finished table or other options with std::runtime_error naming them).
// `interrupted` is polled between measurements: when it turns true the table so far is written
// with its resume state and Interrupted returned. `out_of_time` likewise, but then every M not
// yet tuned takes the cost model's schedule (how "untuned") and the table is finished.
// Throws what tune_schedule_table(..., resume = true, ...) would before it starts.
void check_resumable(const TableTuningSpec& spec, const std::filesystem::path& out);

TableTuningResult tune_schedule_table(
    const TableTuningSpec& spec, const std::filesystem::path& out, bool resume,
    const std::function<bool()>& interrupted, const std::function<bool()>& out_of_time = {},
    const std::function<void(const TableTuningProgress&)>& progress = {});

}  // namespace sandwich::tuner
