#include "tuner/tunable_kernel.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sandwich::tuner {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The M values searched: powers of two below max_m, then max_m.
std::vector<int64_t> m_grid(int64_t max_m) {
  std::vector<int64_t> g;
  for (int64_t m = 1; m < max_m; m *= 2) g.push_back(m);
  g.push_back(max_m);
  return g;
}

}  // namespace

KernelClock timed_runs(KernelMeasureOptions o) {
  return [o](TunableKernel& kernel, int64_t m, const KernelParams& params) {
    for (int i = 0; i < o.warmup; ++i) kernel.run(m, params);
    std::vector<double> t;
    const auto start = Clock::now();
    while (static_cast<int>(t.size()) < std::max(1, o.min_reps) || since(start) < o.min_seconds) {
      const auto t0 = Clock::now();
      kernel.run(m, params);
      t.push_back(since(t0));
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  };
}

engine::TunedKernel search_kernel(TunableKernel& kernel, const KernelClock& clock,
                                  const KernelSearchOptions& o, const std::function<bool()>& stop,
                                  const std::function<void(const KernelProgress&)>& progress,
                                  KernelSearchStats* stats) {
  const auto start = Clock::now();
  const int64_t max_m = o.max_m > 0 ? std::min(o.max_m, kernel.max_m()) : kernel.max_m();
  if (max_m < 1) throw std::invalid_argument(kernel.name() + ": no M to tune");
  KernelSearchStats local;
  KernelSearchStats& st = stats ? *stats : local;
  engine::TunedKernel out{kernel.name(), kernel.key(), {}};
  const std::vector<int64_t> grid = m_grid(max_m);
  const auto stopped = [&] { return stop && stop(); };
  KernelParams last_winner;
  int same = 0;
  for (size_t gi = 0; gi < grid.size(); ++gi) {
    const int64_t m = grid[gi];
    const int64_t m_hi = gi + 1 < grid.size() ? grid[gi + 1] - 1 : max_m;
    if (o.reuse_after > 0 && same >= o.reuse_after) {
      out.ranges.push_back({m, m_hi, last_winner, 0, "reused"});
      ++st.reused_m;
      continue;
    }
    const std::vector<TunableDim> dims = kernel.space(m);
    std::map<KernelParams, double> seen;  // this M's measurements
    double best_seen = 0;
    bool interrupted = false;
    const auto time = [&](const KernelParams& p) {
      if (auto it = seen.find(p); it != seen.end()) return it->second;
      if (stopped()) {
        interrupted = true;
        return 0.0;
      }
      const double s = clock(kernel, m, p);
      ++st.measured;
      seen.emplace(p, s);
      best_seen = best_seen == 0 ? s : std::min(best_seen, s);
      if (progress) progress({kernel.name(), m, max_m, best_seen, since(start)});
      return s;
    };
    KernelParams defaults, best;
    for (const TunableDim& d : dims) {
      defaults[d.name] = std::clamp(d.fallback, d.lo, d.hi);
      best[d.name] = d.lo;
    }
    const double t_default = time(defaults);
    double t_best = time(best);
    // Fast start: double each parameter while it gains; the step that does not is rolled back.
    for (const TunableDim& d : dims) {
      while (!interrupted && best[d.name] * 2 <= d.hi) {
        KernelParams next = best;
        next[d.name] *= 2;
        const double t = time(next);
        if (interrupted || t >= t_best * (1 - o.min_gain)) break;
        best = next;
        t_best = t;
      }
    }
    if (interrupted) break;
    // A winner other than the defaults is timed again beside them (a noisy first measurement
    // must not replace them): each keeps its faster time.
    double t_default_best = t_default;
    if (best != defaults && t_best < t_default * (1 - o.min_gain) && !stopped()) {
      t_default_best = std::min(t_default, clock(kernel, m, defaults));
      t_best = std::min(t_best, clock(kernel, m, best));
      st.measured += 2;
    }
    std::string how = "searched";
    if (t_best >= t_default_best * (1 - o.min_gain)) {
      best = defaults;
      t_best = t_default_best;
      how = "default";
    }
    out.ranges.push_back({m, m_hi, best, t_best, how});
    ++st.searched_m;
    same = best == last_winner ? same + 1 : 1;
    last_winner = best;
  }
  st.seconds += since(start);
  return out;
}

}  // namespace sandwich::tuner
