#pragma once
// The GEMM tuner: builds each schedule from the micro-kernels by measuring on the machine, for
// every M from 1 to the longest prefill (the paper's tensor program generation).
//
// Per micro-kernel, fast start grows the per-thread slice by 2^t x tile along each dimension
// while GFLOPS gain, never past what the thread split leaves a thread; finetune enumerates the
// thread polymerizations (tm x tn x tk, split-k included) and grows the slice along the
// dimension that gains most under each. Shapes sharing N and K are tuned together in increasing
// M: the first `window` M try every micro-kernel, later ones only those that won in the last
// `window`; once the winner's slice and polymerization stay within `reuse_threshold` of their
// running average they are fixed and the larger M derive their schedules without search.
// Measured schedules are cached across groups. A key of quantized weights (GemmKey::qtype) is
// searched the same way over the quantized GEMM's schedules: the integer kernels' tile heights
// (um rows x 16-row panels, bk in whole blocks, no split-k) and, from unpack_min_m on, the
// BF16-unpacking path (its chunk of rows, bn), measured on the real quantized GEMM.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/schedule.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::tuner {

// Measures one schedule on one shape: seconds per call (the median of its repetitions).
class GemmProfiler {
 public:
  virtual ~GemmProfiler() = default;
  virtual double seconds(const kernels::GemmShape& shape, const kernels::Schedule& schedule) = 0;
};

// The real one: weights packed as the engine packs them (rotating over enough copies that the
// last-level cache cannot hold them), activations as the engine lays them out, run on a thread
// team pinned to `cpus` (one rank's cores); warm-up, then repetitions until `min_seconds` and
// at least `min_reps`, median.
struct ProfilerOptions {
  std::vector<int> cpus;  // empty: the first `threads` CPUs
  int warmup = 1;  // calls before timing; skipped when the previous measurement ran the same shape
  int min_reps = 3;
  double min_seconds = 0.01;
};
std::unique_ptr<GemmProfiler> make_machine_profiler(const ProfilerOptions& o);

struct GemmTunerOptions {
  int window = 16;  // sigma: shapes that try every micro-kernel
  double reuse_threshold =
      0.05;  // relative spread around the running average that counts as stable
  int64_t max_m = 2048;
  // Budget policy, so that a whole model tunes in minutes: only the best `finetune_kernels`
  // micro-kernels after fast start go on to finetune; while no schedule is fixed, every M up to
  // `dense_m` is searched and above it only M growing by `sparse_growth` (the M between take the
  // last winner's schedule, "derived"); an M whose cost-model schedule takes longer than
  // `local_search_above_s` per call searches only around its incumbent (each slice dimension
  // doubled and halved, the other polymerizations, the cost model's choice).
  int finetune_kernels = 3;
  int64_t dense_m = 64;
  double sparse_growth = 2;
  double local_search_above_s = 0.002;
  // A winner other than the cost model's schedule is timed again beside it, `confirm_rounds`
  // times each in turn, and kept only when its median beats the default's by `confirm_margin`:
  // single measurements on a shared memory bus drift by more than most schedules differ.
  int confirm_rounds = 5;
  double confirm_margin = 0.02;
  // Quantized weights: from this M on, the BF16-unpacking path (Schedule::unpack_bf16) is a
  // candidate beside the integer kernels. It widens every weight on each call, which only a
  // prefill's many rows can repay.
  int64_t unpack_min_m = 32;
};

struct TunedPoint {
  int64_t m = 0;
  kernels::Schedule schedule;
  double seconds = 0;          // measured (0 when derived)
  double default_seconds = 0;  // the cost model's schedule, measured at this M (0: not)
  // "searched" (all micro-kernels), "window" (the window's micro-kernels, or around the
  // incumbent when measuring is expensive), "reused" (the fixed slice, not measured),
  // "verified" (the fixed slice at a checkpoint, measured and kept), "derived" (the last
  // winner's slice between sparse searches, not measured), "default" (the cost model's, which
  // the winner did not beat when the two were timed in turn).
  std::string how;
};

struct GemmGroupResult {
  kernels::GemmKey key;            // from kernels/tuned_schedules.h
  std::vector<TunedPoint> points;  // one per M, 1..max_m, increasing
};

struct TunerStats {
  int64_t profiled = 0;          // schedules measured
  int64_t cache_hits = 0;        // measurements answered by the cache
  int64_t window_saved = 0;      // micro-kernels not tried thanks to the sliding window
  int64_t reuse_saved_m = 0;     // M values derived from a fixed slice without search
  int64_t sparse_saved_m = 0;    // M values between sparse searches (the budget policy)
  int64_t searched_m = 0;        // M values searched (checkpoints included)
  int64_t confirm_rejected = 0;  // winners that did not beat the cost model when timed beside it
  double seconds = 0;
};

struct TunerProgress {
  std::string group;  // GemmKey::to_string
  int group_index = 0, groups = 0;
  int64_t m = 0, max_m = 0;
  double best_gflops = 0;
  double elapsed_s = 0, remaining_s = 0;  // remaining: an estimate
};

// Roughly proportional to the time tuning M in [m_lo, m_hi] of a key takes (a roofline per M,
// weighted by how densely the budget policy searches it): for remaining-time estimates.
double tuning_work(const kernels::GemmKey& key, const GemmTunerOptions& o, int64_t m_lo,
                   int64_t m_hi);

// The schedules the tuner's search moves through for one float-weight shape, all of them (the
// kernel schedule sweep times them): each micro-kernel the tuner tries (those of `tiles`, um x
// un, when given), each thread polymerization the shape can use, and each slice fast start and
// finetune can reach (bm, bn, bk doubling from one tile, one panel, four cache lines of
// activations up to what the split leaves a thread); prefetch on and off at M <= 2; then the
// cost model's schedule (its slices are sized by rule, off that grid) when it is not among
// them. Throws std::invalid_argument for quantized weights.
std::vector<kernels::Schedule> search_space(const kernels::GemmShape& s,
                                            const std::vector<std::pair<int, int>>& tiles = {});

class GemmTuner {
 public:
  GemmTuner(GemmProfiler& profiler, GemmTunerOptions o);
  ~GemmTuner();
  // The search of one M alone, as tune() searches its first M values: every micro-kernel's
  // fast start, finetune of the best, then confirmed against the cost model's schedule.
  TunedPoint tune_at(const kernels::GemmKey& key, int64_t m);
  // Tunes one group (all M for the key). `resume_from` continues a group stopped at that M
  // with its earlier points; `stop` is polled between measurements (Ctrl-C): when it returns
  // true the result so far is returned (points up to the last finished M).
  GemmGroupResult tune(const kernels::GemmKey& key, const GemmGroupResult* resume_from = nullptr,
                       const std::function<bool()>& stop = {},
                       const std::function<void(const TunerProgress&)>& progress = {});
  const TunerStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::tuner
