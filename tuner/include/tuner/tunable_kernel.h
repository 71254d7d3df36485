#pragma once
// Hand-written tunable kernels (the paper's attention block sizes): a kernel exposes its shape
// key, a parameter space per M and one run; one search, the GEMM tuner's fast start, picks its
// parameters for each M and fills the schedule table's "tunables".
//
// Per M, the search starts every parameter at its lower bound and doubles one parameter at a
// time while the kernel gets faster by at least `min_gain`, rolling the last step back when it
// does not; the kernel's defaults win unless the result, timed again beside them, beats them by
// `min_gain`. M grows in
// powers of two up to max_m; once the winner stays the same for `reuse_after` M values the
// larger M take it without search.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/plans/schedule_table.h"

namespace sandwich::tuner {

using KernelParams = std::map<std::string, int64_t>;

struct TunableDim {
  std::string name;
  int64_t lo = 1, hi = 1;  // the search's bounds, inclusive; it doubles from lo
  int64_t fallback = 1;    // the kernel's default
};

class TunableKernel {
 public:
  virtual ~TunableKernel() = default;
  virtual std::string name() const = 0;  // the registry's kernel name
  virtual KernelParams key() const = 0;  // the registry's shape key
  virtual int64_t max_m() const = 0;     // the largest M run() takes
  // The parameters at this M (bounds may depend on M, e.g. a chunk no longer than M).
  virtual std::vector<TunableDim> space(int64_t m) const = 0;
  // One call of the kernel at this M.
  virtual void run(int64_t m, const KernelParams& params) = 0;
};

// Seconds per call of `kernel` at M with `params`; the real one times runs, tests fake it.
using KernelClock = std::function<double(TunableKernel& kernel, int64_t m, const KernelParams&)>;

struct KernelMeasureOptions {
  int warmup = 1;
  int min_reps = 3;
  double min_seconds = 0.005;  // repetitions continue until this much time has passed
};
// Warm-up, then repetitions until min_seconds and at least min_reps; the median.
KernelClock timed_runs(KernelMeasureOptions o = {});

struct KernelSearchOptions {
  int64_t max_m = 0;       // 0: the kernel's max_m()
  double min_gain = 0.03;  // relative speed-up a step must bring to be kept
  int reuse_after = 3;     // searched M values with the same winner before the rest are reused
};

struct KernelSearchStats {
  int64_t measured = 0;    // parameter sets timed
  int64_t searched_m = 0;  // M values searched
  int64_t reused_m = 0;    // M values that took the winner without search
  double seconds = 0;
};

struct KernelProgress {
  std::string kernel;
  int64_t m = 0, max_m = 0;
  double best_seconds = 0;  // this M's best so far
  double elapsed_s = 0;
};

// One TunedKernel: the kernel's name and key, one range per M of the grid (1, 2, 4, ..., max_m;
// a range runs to the next grid M), params, measured seconds (0 when reused) and how ("searched",
// "default" where nothing beat the defaults, "reused"). `stop` is polled between measurements:
// when it returns true the ranges finished so far are returned.
engine::TunedKernel search_kernel(TunableKernel& kernel, const KernelClock& clock,
                                  const KernelSearchOptions& o = {},
                                  const std::function<bool()>& stop = {},
                                  const std::function<void(const KernelProgress&)>& progress = {},
                                  KernelSearchStats* stats = nullptr);

}  // namespace sandwich::tuner
