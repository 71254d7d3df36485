// The GEMM tuner's search: fast start, finetune, the sliding window of micro-kernels, schedule
// reuse with checkpoints, and the budget policy that keeps a whole model to minutes. Quantized
// weights run the same search over their own space: the integer kernels' tile heights (um rows
// x 16-row panels, K in whole blocks, no split-k) and, for prefill M, the BF16-unpacking path,
// whose one parameter is the rows widened at a time (bn).
#include "tuner/gemm_tuner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <compare>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"

namespace sandwich::tuner {

using kernels::GemmKey;
using kernels::GemmShape;
using kernels::Schedule;

namespace {

// Thrown out of a measurement when stop() says so; tune() returns what it has.
struct Stopped {};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t v, int64_t q) {
  return ceil_div(v, q) * q;
}

// K elements of one cache line of packed activations: K blocks are multiples of it. Quantized
// weights: one block of the type (32 or 256), the integer kernels' K step.
int64_t line_elements(const GemmKey& key) {
  if (key.qtype) return kernels::qtype_info(*key.qtype).block_elems;
  const kernels::Isa isa = kernels::gemm_isa(key.weights);
  return static_cast<int64_t>(64 / kernels::dtype_size(kernels::activation_type(isa, key.weights)));
}

// Output columns of one panel, the granularity of bn: 64, or 16 rows of a quantized panel.
int64_t panel_of(const GemmKey& key) {
  if (!key.qtype) return kernels::kPanel;
  return kernels::plan_packed_weight_quant(1, line_elements(key), *key.qtype).panel;
}

kernels::Isa isa_of(const GemmKey& key) {
  return key.qtype ? kernels::quant_gemm_isa() : kernels::gemm_isa(key.weights);
}

double flops(const GemmShape& s) {
  return 2.0 * double(s.m) * double(s.n) * double(s.k) * (s.pair ? 2 : 1);
}

// The slice granularities of one group: bn in panels (kPanel, or a quantized panel) and bk in
// lines (cache lines of activations, or quantized blocks).
struct Grain {
  int64_t panel = kernels::kPanel, line = 32;
};

struct Caps {
  int64_t bm, bn, bk;
};
// The BF16-unpacking path's chunk: whole 64-row BF16 panels, up to the whole matrix (every
// thread widens every chunk, so no thread split caps it).
Caps unpack_caps(const GemmShape& s, const Schedule& c) {
  return {c.bm, round_up(s.n, kernels::kPanel), c.bk};
}
// The largest slice a thread can use under the schedule's split: its rows (whole tiles), its
// panels, its K share (whole cache lines).
Caps caps_of(const GemmShape& s, const Schedule& c, const Grain& g) {
  if (c.unpack_bf16) return unpack_caps(s, c);
  const int64_t panels = ceil_div(s.n, g.panel);
  return {round_up(ceil_div(s.m, c.tm), c.um), ceil_div(panels, c.tn) * g.panel,
          round_up(ceil_div(s.k, c.tk), g.line)};
}
// Fast start's cap, before a split is chosen: the slice must leave every dimension splittable
// over all the threads (the paper: (128, 64, 64) on 2 threads caps at (64, 32, 32)).
Caps fast_start_caps(const GemmShape& s, int um, const Grain& g) {
  const int64_t panels = ceil_div(s.n, g.panel);
  return {round_up(ceil_div(s.m, s.threads), um),
          std::max<int64_t>(1, ceil_div(panels, s.threads)) * g.panel,
          round_up(ceil_div(s.k, s.threads), g.line)};
}

Schedule clip(Schedule c, const Caps& cap, const Grain& g) {
  c.bm = std::max<int64_t>(c.um, std::min(c.bm, cap.bm) / c.um * c.um);
  c.bn = std::max<int64_t>(c.unpack_bf16 ? kernels::kPanel : g.panel, std::min(c.bn, cap.bn));
  c.bk = std::max<int64_t>(1, std::min(c.bk, cap.bk));
  return c;
}

enum Dim { kDimM, kDimN, kDimK };
// The slice grown (factor 2) or shrunk (factor 0.5) along one dimension, within the caps;
// nullopt when it cannot move. The unpacking path moves along N only.
std::optional<Schedule> resize(const Schedule& c, Dim d, bool grow, const Caps& cap,
                               const Grain& g) {
  if (c.unpack_bf16 && d != kDimN) return std::nullopt;
  const int64_t panel = c.unpack_bf16 ? kernels::kPanel : g.panel;
  Schedule n = c;
  if (d == kDimM)
    n.bm = grow ? std::min(c.bm * 2, cap.bm) : std::max<int64_t>(c.um, c.bm / 2 / c.um * c.um);
  if (d == kDimN)
    n.bn = grow ? std::min(c.bn * 2, cap.bn) : std::max<int64_t>(panel, c.bn / 2 / panel * panel);
  if (d == kDimK)
    n.bk = grow ? std::min(c.bk * 2, cap.bk) : std::max(g.line, c.bk / 2 / g.line * g.line);
  if (n.bm == c.bm && n.bn == c.bn && n.bk == c.bk) return std::nullopt;
  return n;
}

// Every thread grid tm x tn x tk = threads this shape can use: no more N threads than panels,
// no more M threads than row tiles, split-k only where the cost model allows it (long K, not
// the fused pair). Quantized weights have no split-k (quant_gemm.cpp runs tk as more tn).
std::vector<std::array<int, 3>> polymerizations(const GemmShape& s, int um, const Grain& g) {
  const int64_t panels = ceil_div(s.n, g.panel);
  const int64_t steps = s.qtype ? 0 : ceil_div(s.k, kernels::k_group(s.weights));
  const int64_t m_tiles = ceil_div(s.m, um);
  std::vector<std::array<int, 3>> out;
  for (int tm = 1; tm <= s.threads; ++tm)
    for (int tk = 1; tm * tk <= s.threads; ++tk) {
      if (s.threads % (tm * tk)) continue;
      const int tn = s.threads / (tm * tk);
      if (tn > panels || tm > m_tiles) continue;
      if (tk > 1 && (steps < 256 * tk || s.pair || s.batch_invariant)) continue;
      out.push_back({tm, tn, tk});
    }
  return out;
}

// A candidate micro-kernel: a um x un tile, or (quantized weights) the BF16-unpacking path.
struct Kernel {
  int um = 1, un = 64;
  bool unpack = false;
  auto operator<=>(const Kernel&) const = default;
};

// A schedule of kernel k and thread split (tm, tn, tk); its slice is set by the caller.
Schedule kernel_schedule(const GemmKey& key, const Kernel& k, const std::array<int, 3>& split,
                         bool prefetch) {
  Schedule c;
  c.isa = isa_of(key);
  c.um = k.um;
  c.un = k.un;
  c.tm = split[0];
  c.tn = split[1];
  c.tk = split[2];
  c.prefetch = prefetch;
  return c;
}

// The micro-kernels the tuner tries for a key on this CPU: the table's tiles for its float
// weights whose tail kernels exist, or the integer kernels' tile heights for quantized ones
// (validate_quant_schedule knows them). Not the unpacking path.
std::vector<Kernel> kernels_of(const GemmKey& key) {
  std::vector<Kernel> out;
  const GemmShape probe = kernels::shape_at(key, 1);
  if (key.qtype) {
    for (int um = 1; um <= 64; ++um) {
      Schedule c = kernels::default_schedule(probe);
      c.um = um;
      c.bm = um;
      try {
        kernels::validate_schedule(probe, c);
      } catch (const std::invalid_argument&) {
        continue;
      }
      out.push_back({um, c.un, false});
    }
    return out;
  }
  for (const kernels::MicroKernel& k : kernels::microkernel_table()) {
    if (k.isa != kernels::gemm_isa(key.weights) || k.weights != key.weights ||
        !kernels::cpu_has(k.isa))
      continue;
    Schedule c;
    c.isa = k.isa;
    c.um = k.um;
    c.un = k.un;
    c.tn = key.threads;
    c.bm = k.um;
    try {
      kernels::validate_schedule(probe, c);  // its tail kernels exist
    } catch (const std::invalid_argument&) {
      continue;
    }
    out.push_back({k.um, k.un, false});
  }
  return out;
}

// What reuse fixes and derivation scales: the kernel, the slice (bm relative to a thread's
// rows), the split and the prefetch flag (and the quantized GEMM's path).
struct Shape {
  int um = 1, un = 64;
  double bm_rel = 1;
  int64_t bn = 64, bk = 64;
  int tm = 1, tn = 1, tk = 1;
  bool prefetch = true;
  bool unpack = false;
};
Shape shape_of(const GemmShape& s, const Schedule& c) {
  const int64_t rows = round_up(ceil_div(s.m, c.tm), c.um);
  return {c.um,       c.un,         double(c.bm) / double(rows), c.bn, c.bk, c.tm, c.tn, c.tk,
          c.prefetch, c.unpack_bf16};
}

}  // namespace

std::vector<Schedule> search_space(const GemmShape& s,
                                   const std::vector<std::pair<int, int>>& tiles) {
  if (s.qtype)
    throw std::invalid_argument("the schedule space is listed for float weights only, not " +
                                kernels::key_of(s).to_string());
  const GemmKey key = kernels::key_of(s);
  const Grain grain{panel_of(key), line_elements(key)};
  // A doubling chain from `lo` that ends at the cap, as resize() grows a slice.
  auto chain = [](int64_t lo, int64_t cap) {
    std::vector<int64_t> v;
    for (int64_t x = std::min(lo, cap); x < cap; x *= 2) v.push_back(x);
    v.push_back(cap);
    return v;
  };
  std::vector<Schedule> out;
  for (const Kernel& k : kernels_of(key)) {
    if (k.um > s.m) continue;
    if (!tiles.empty() &&
        std::find(tiles.begin(), tiles.end(), std::pair{k.um, k.un}) == tiles.end())
      continue;
    for (const auto& split : polymerizations(s, k.um, grain))
      for (bool prefetch : {true, false}) {
        if (!prefetch && s.m > 2) continue;
        Schedule c = kernel_schedule(key, k, split, prefetch);
        const Caps cap = caps_of(s, c, grain);
        for (int64_t bm : chain(k.um, cap.bm))
          for (int64_t bn : chain(grain.panel, cap.bn))
            for (int64_t bk : chain(4 * grain.line, cap.bk)) {
              c.bm = bm;
              c.bn = bn;
              c.bk = bk;
              out.push_back(clip(c, cap, grain));
            }
      }
  }
  const Schedule d = kernels::default_schedule(s);
  if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

double tuning_work(const GemmKey& key, const GemmTunerOptions& o, int64_t m_lo, int64_t m_hi) {
  const double mats = key.pair ? 2 : 1;
  const double bytes_per_weight = key.qtype ? kernels::qtype_info(*key.qtype).bits_per_weight() / 8
                                            : double(kernels::dtype_size(key.weights));
  const double wbytes = double(key.n) * key.k * bytes_per_weight * mats;
  double w = 0;
  for (int64_t m = std::max<int64_t>(1, m_lo); m <= m_hi; ++m) {
    const double t = std::max(wbytes / 40e9, 2.0 * m * key.n * key.k * mats / 300e9) + 2e-3;
    // Dense M: one search each (the first `window` with every micro-kernel); above: sparse.
    const double density = m <= o.window    ? 4.0
                           : m <= o.dense_m ? 1.0
                                            : 1.0 / (double(m) * std::log(o.sparse_growth));
    w += t * density;
  }
  return w;
}

struct GemmTuner::Impl {
  GemmProfiler& profiler;
  GemmTunerOptions o;
  TunerStats stats;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int, bool, std::string>, double> cache;
  std::vector<Kernel> all_kernels;  // every candidate micro-kernel (not the unpacking path)

  // Per group.
  GemmKey key;
  Grain grain;
  const std::function<bool()>* stop = nullptr;
  double best_gflops = 0;

  Impl(GemmProfiler& p, GemmTunerOptions opts) : profiler(p), o(opts) {}

  GemmShape shape(int64_t m) const { return kernels::shape_at(key, m); }

  // Starts a group: its key, grain and micro-kernels.
  void begin_group(const GemmKey& k) {
    key = k;
    grain = {panel_of(k), line_elements(k)};
    best_gflops = 0;
    all_kernels = kernels_of(k);
    if (all_kernels.empty())
      throw std::runtime_error("no micro-kernel for " + k.to_string() + " on this CPU");
  }

  // The BF16-unpacking path is a candidate for quantized weights at prefill M: below, widening
  // every weight per call costs more than the integer kernels' whole GEMM.
  bool unpack_eligible(const GemmShape& s) const { return s.qtype && s.m >= o.unpack_min_m; }

  // Seconds of one call, from the cache or measured; +inf for a schedule that is not valid.
  double measure(const GemmShape& s, const Schedule& c) {
    try {
      kernels::validate_schedule(s, c);
    } catch (const std::invalid_argument&) {
      return INFINITY;
    }
    const auto k = std::make_tuple(s.m, s.n, s.k, int(s.weights), s.qtype ? int(*s.qtype) : -1,
                                   s.threads, s.pair, c.to_string());
    const auto it = cache.find(k);
    if (it != cache.end()) {
      ++stats.cache_hits;
      return it->second;
    }
    if (stop && *stop && (*stop)()) throw Stopped{};
    const double t = profiler.seconds(s, c);
    ++stats.profiled;
    cache.emplace(k, t);
    if (t > 0) best_gflops = std::max(best_gflops, flops(s) / t / 1e9);
    return t;
  }

  struct Best {
    Schedule c;
    double t = INFINITY;
    void offer(const Schedule& s, double ts) {
      if (ts < t) c = s, t = ts;
    }
  };

  // Fast start for one micro-kernel: from (um, one panel, 4 lines) grow K, then N, then M by
  // doubling while the time improves; a step that does not gain is rolled back and ends its
  // dimension. The unpacking path grows its chunk from one BF16 panel.
  Best fast_start(const GemmShape& s, const Kernel& k, const std::array<int, 3>& split,
                  bool prefetch) {
    Schedule c;
    Caps cap{};
    if (k.unpack) {
      c = kernels::default_schedule(s);
      c.unpack_bf16 = true;
      c.bn = kernels::kPanel;
      cap = unpack_caps(s, c);
    } else {
      cap = fast_start_caps(s, k.um, grain);
      c = kernel_schedule(key, k, split, prefetch);
      c.bm = k.um;
      c.bn = grain.panel;
      c.bk = 4 * grain.line;
    }
    c = clip(c, cap, grain);
    Best b;
    b.offer(c, measure(s, c));
    for (Dim d : {kDimK, kDimN, kDimM}) {
      while (auto next = resize(b.c, d, true, cap, grain)) {
        const double t = measure(s, *next);
        if (t >= b.t) break;
        b.offer(*next, t);
      }
    }
    return b;
  }

  // Finetune from a fast-start slice: under each split, grow along the dimension that gains
  // most until none does.
  Best finetune(const GemmShape& s, const Schedule& start) {
    Best best;
    for (const auto& split : splits_for(s, start)) {
      Schedule c = start;
      c.tm = split[0];
      c.tn = split[1];
      c.tk = split[2];
      const Caps cap = caps_of(s, c, grain);
      c = clip(c, cap, grain);
      Best b;
      b.offer(c, measure(s, c));
      for (;;) {
        Best step;
        for (Dim d : {kDimM, kDimN, kDimK})
          if (auto next = resize(b.c, d, true, cap, grain)) step.offer(*next, measure(s, *next));
        if (step.t >= b.t) break;
        b = step;
      }
      if (b.t < best.t) best = b;
    }
    return best;
  }

  // The thread grids a schedule may take: the unpacking path runs the BF16 GEMM's own split,
  // so its grid is the rule's and nothing to search.
  std::vector<std::array<int, 3>> splits_for(const GemmShape& s, const Schedule& c) const {
    if (c.unpack_bf16) return {{c.tm, c.tn, c.tk}};
    return polymerizations(s, c.um, grain);
  }

  std::array<int, 3> start_split(const GemmShape& s, int um) const {
    const Schedule d = kernels::default_schedule(s);
    const auto splits = polymerizations(s, um, grain);
    for (const auto& p : splits)
      if (p[0] == d.tm && p[1] == d.tn && p[2] == d.tk) return p;
    return splits.empty() ? std::array<int, 3>{1, s.threads, 1} : splits.front();
  }

  // The search at one M over these micro-kernels, beside the cost model's schedule and an
  // incumbent.
  Best search(const GemmShape& s, std::vector<Kernel> kernels_to_try,
              const std::optional<Schedule>& incumbent) {
    Best best;
    best.offer(kernels::default_schedule(s), measure(s, kernels::default_schedule(s)));
    if (incumbent) best.offer(*incumbent, measure(s, *incumbent));
    const Kernel unpack{0, 0, true};
    if (unpack_eligible(s) &&
        std::find(kernels_to_try.begin(), kernels_to_try.end(), unpack) == kernels_to_try.end())
      kernels_to_try.push_back(unpack);
    std::vector<Best> starts;
    for (const Kernel& k : kernels_to_try) {
      if (k.unpack ? !unpack_eligible(s) : k.um > s.m) continue;
      const auto split = start_split(s, std::max(1, k.um));
      Best b = fast_start(s, k, split, true);
      // One or two rows: whether software prefetch helps depends on the CPU (what
      // MachineModel::skinny_hw_prefetch hand-corrects, and the quantized kernels' memory
      // stream); measure both. (The unpacking path has no prefetch of its own.)
      if (s.m <= 2 && !k.unpack) {
        const Best off = fast_start(s, k, split, false);
        if (off.t < b.t) b = off;
      }
      starts.push_back(b);
    }
    std::sort(starts.begin(), starts.end(), [](const Best& a, const Best& b) { return a.t < b.t; });
    for (size_t i = 0; i < starts.size(); ++i) {
      best.offer(starts[i].c, starts[i].t);
      if (static_cast<int>(i) >= o.finetune_kernels) continue;
      const Best f = finetune(s, starts[i].c);
      best.offer(f.c, f.t);
    }
    if (s.m <= 2 && !best.c.unpack_bf16) {
      Schedule flip = best.c;
      flip.prefetch = !flip.prefetch;
      best.offer(flip, measure(s, flip));
    }
    return best;
  }

  // Around an incumbent only: each slice dimension doubled and halved, the other splits.
  Best local_search(const GemmShape& s, const Schedule& incumbent) {
    Best best;
    best.offer(kernels::default_schedule(s), measure(s, kernels::default_schedule(s)));
    best.offer(incumbent, measure(s, incumbent));
    const Caps cap = caps_of(s, incumbent, grain);
    for (Dim d : {kDimM, kDimN, kDimK})
      for (bool grow : {true, false})
        if (auto n = resize(incumbent, d, grow, cap, grain)) best.offer(*n, measure(s, *n));
    for (const auto& split : splits_for(s, incumbent)) {
      Schedule c = incumbent;
      c.tm = split[0];
      c.tn = split[1];
      c.tk = split[2];
      if (c == incumbent) continue;
      c = clip(c, caps_of(s, c, grain), grain);
      best.offer(c, measure(s, c));
    }
    return best;
  }

  Schedule derive(const Shape& f, const GemmShape& s) const {
    if (f.unpack) {
      if (!unpack_eligible(s)) return kernels::default_schedule(s);
      Schedule c = kernels::default_schedule(s);
      c.unpack_bf16 = true;
      c.bn = f.bn;
      return clip(c, unpack_caps(s, c), grain);
    }
    Schedule c;
    c.isa = isa_of(key);
    c.um = f.um;
    c.un = f.un;
    c.tm = f.tm;
    c.tn = f.tn;
    c.tk = f.tk;
    c.prefetch = f.prefetch;
    const int64_t rows = round_up(ceil_div(s.m, c.tm), c.um);
    c.bm = std::max<int64_t>(c.um, std::llround(f.bm_rel * double(rows)) / c.um * c.um);
    c.bn = f.bn;
    c.bk = f.bk;
    c = clip(c, caps_of(s, c, grain), grain);
    // A split the shape cannot use (more M threads than tiles): the cost model's.
    const auto splits = polymerizations(s, c.um, grain);
    if (splits.empty()) return kernels::default_schedule(s);
    bool ok = false;
    for (const auto& p : splits) ok |= p[0] == c.tm && p[1] == c.tn && p[2] == c.tk;
    if (!ok) {
      const auto p = start_split(s, c.um);
      c.tm = p[0];
      c.tn = p[1];
      c.tk = p[2];
      c = clip(c, caps_of(s, c, grain), grain);
    }
    return c;
  }

  // The state of a group between M values; rebuilt from the points on resume.
  struct State {
    std::deque<Shape> history;  // winners of the last `window` searches
    std::optional<Shape> fixed;
    int64_t next_check = 0;   // while fixed: the checkpoint M
    int64_t next_search = 0;  // while not fixed, above dense_m: the next sparse M
    std::optional<Shape> last;
  };
  enum class Plan { Full, Window, Check, Reuse, Derive };

  Plan plan(const State& st, int64_t m) const {
    if (st.fixed) return m >= st.next_check || m == o.max_m ? Plan::Check : Plan::Reuse;
    if (m <= o.window || !st.last) return Plan::Full;
    if (m <= o.dense_m || m >= st.next_search || m == o.max_m) return Plan::Window;
    return Plan::Derive;
  }

  bool stable(const State& st) const {
    const size_t q = static_cast<size_t>(std::max(2, o.window / 4));
    if (st.history.size() < q) return false;
    const auto first = st.history.end() - static_cast<std::ptrdiff_t>(q);
    double bm = 0, bn = 0, bk = 0;
    for (auto it = first; it != st.history.end(); ++it) {
      if (it->um != st.history.back().um || it->un != st.history.back().un ||
          it->tm != st.history.back().tm || it->tn != st.history.back().tn ||
          it->tk != st.history.back().tk || it->prefetch != st.history.back().prefetch ||
          it->unpack != st.history.back().unpack)
        return false;
      bm += it->bm_rel / q;
      bn += double(it->bn) / q;
      bk += double(it->bk) / q;
    }
    const double r = o.reuse_threshold;
    for (auto it = first; it != st.history.end(); ++it)
      if (std::abs(it->bm_rel - bm) > r * bm || std::abs(it->bn - bn) > r * bn ||
          std::abs(it->bk - bk) > r * bk)
        return false;
    return true;
  }

  // Moves the state past one finished point (live or replayed on resume).
  void advance(State& st, Plan p, const TunedPoint& pt) {
    const GemmShape s = shape(pt.m);
    const Shape w = shape_of(s, pt.schedule);
    switch (p) {
      case Plan::Reuse:
        return;
      case Plan::Derive:
        return;
      case Plan::Check:
        if (pt.how == "verified") {
          st.next_check = pt.m * 2;
          return;
        }
        st.fixed.reset();  // beaten: search again
        st.history.clear();
        [[fallthrough]];
      case Plan::Full:
      case Plan::Window:
        st.last = w;
        st.history.push_back(w);
        while (st.history.size() > static_cast<size_t>(std::max(1, o.window)))
          st.history.pop_front();
        if (pt.m >= o.dense_m)
          st.next_search = std::max<int64_t>(
              pt.m + 1, static_cast<int64_t>(std::ceil(double(pt.m) * o.sparse_growth)));
        if (pt.m > o.window && stable(st)) {
          st.fixed = w;
          st.next_check = pt.m * 2;
        }
        return;
    }
  }

  std::vector<Kernel> window_kernels(const State& st) const {
    std::set<Kernel> k;
    for (const Shape& h : st.history)
      k.insert(h.unpack ? Kernel{0, 0, true} : Kernel{h.um, h.un, false});
    return {k.begin(), k.end()};
  }

  TunedPoint run_point(const State& st, Plan p, int64_t m) {
    const GemmShape s = shape(m);
    TunedPoint pt;
    pt.m = m;
    if (p == Plan::Reuse || p == Plan::Derive) {
      pt.schedule = derive(p == Plan::Reuse ? *st.fixed : *st.last, s);
      pt.how = p == Plan::Reuse ? "reused" : "derived";
      ++(p == Plan::Reuse ? stats.reuse_saved_m : stats.sparse_saved_m);
      return pt;
    }
    ++stats.searched_m;
    const std::optional<Schedule> incumbent = p == Plan::Check ? derive(*st.fixed, s)
                                              : st.last
                                                  ? std::optional<Schedule>(derive(*st.last, s))
                                                  : std::nullopt;
    int64_t candidates = unpack_eligible(s) ? 1 : 0;
    for (const Kernel& k : all_kernels) candidates += k.um <= m;
    Best b;
    if (p == Plan::Full) {
      b = search(s, all_kernels, incumbent);
    } else {
      const double t_default = measure(s, kernels::default_schedule(s));
      if (t_default > o.local_search_above_s) {
        b = local_search(s, *incumbent);
        stats.window_saved += std::max<int64_t>(0, candidates - 1);
      } else {
        const auto ks = window_kernels(st);
        b = search(s, ks, incumbent);
        stats.window_saved += std::max<int64_t>(0, candidates - static_cast<int64_t>(ks.size()));
      }
    }
    pt.schedule = b.c;
    pt.seconds = b.t;
    pt.default_seconds = measure(s, kernels::default_schedule(s));  // cached: every search has it
    pt.how = p == Plan::Full ? "searched" : "window";
    if (p == Plan::Check) {
      const double t_inc = measure(s, *incumbent);
      if (t_inc <= b.t * (1 + o.reuse_threshold)) {
        pt.schedule = *incumbent;
        pt.seconds = t_inc;
        pt.how = "verified";
      }
    }
    confirm(s, pt);
    return pt;
  }

  // Times the point's schedule and the cost model's in turn; the cost model's stays unless the
  // other's median is faster by the margin.
  void confirm(const GemmShape& s, TunedPoint& pt) {
    const Schedule d = kernels::default_schedule(s);
    if (pt.schedule == d || o.confirm_rounds < 1) return;
    std::vector<double> tw, td;
    for (int r = 0; r < o.confirm_rounds; ++r) {
      if (stop && *stop && (*stop)()) throw Stopped{};
      tw.push_back(profiler.seconds(s, pt.schedule));
      td.push_back(profiler.seconds(s, d));
      stats.profiled += 2;
    }
    auto median = [](std::vector<double>& v) {
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    const double w = median(tw), dm = median(td);
    pt.default_seconds = dm;
    if (w * (1 + o.confirm_margin) < dm) {
      pt.seconds = w;
    } else {
      pt.schedule = d;
      pt.seconds = dm;
      pt.how = "default";
      ++stats.confirm_rejected;
    }
  }
};

GemmTuner::GemmTuner(GemmProfiler& profiler, GemmTunerOptions o)
    : impl_(std::make_unique<Impl>(profiler, o)) {
  if (o.window < 1) throw std::invalid_argument("the window must be at least 1");
  if (o.max_m < 1) throw std::invalid_argument("max_m must be at least 1");
  if (!(o.reuse_threshold >= 0)) throw std::invalid_argument("reuse_threshold must be >= 0");
  if (!(o.sparse_growth > 1)) throw std::invalid_argument("sparse_growth must exceed 1");
}
GemmTuner::~GemmTuner() = default;

const TunerStats& GemmTuner::stats() const {
  return impl_->stats;
}

TunedPoint GemmTuner::tune_at(const GemmKey& key, int64_t m) {
  if (m < 1) throw std::invalid_argument("tune_at: M must be at least 1");
  Impl& I = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  I.begin_group(key);
  I.stop = nullptr;
  TunedPoint pt = I.run_point(Impl::State{}, Impl::Plan::Full, m);
  I.stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return pt;
}

GemmGroupResult GemmTuner::tune(const GemmKey& key, const GemmGroupResult* resume_from,
                                const std::function<bool()>& stop,
                                const std::function<void(const TunerProgress&)>& progress) {
  Impl& I = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  I.begin_group(key);
  I.stop = &stop;

  GemmGroupResult r;
  r.key = key;
  Impl::State st;
  int64_t m = 1;
  if (resume_from) {
    for (const TunedPoint& p : resume_from->points) {
      if (p.m != m)
        throw std::invalid_argument("resume: points of " + key.to_string() +
                                    " do not run 1, 2, ... in order");
      I.advance(st, I.plan(st, m), p);
      if (p.seconds > 0)
        I.best_gflops = std::max(I.best_gflops, flops(I.shape(m)) / p.seconds / 1e9);
      r.points.push_back(p);
      ++m;
    }
  }
  const double work_total = tuning_work(key, I.o, 1, I.o.max_m);
  const double work_before = tuning_work(key, I.o, 1, m - 1);
  auto last_report = t0 - std::chrono::hours(1);
  try {
    for (; m <= I.o.max_m; ++m) {
      const Impl::Plan p = I.plan(st, m);
      TunedPoint pt = I.run_point(st, p, m);
      I.advance(st, p, pt);
      r.points.push_back(std::move(pt));
      const auto now = std::chrono::steady_clock::now();
      if (progress && (now - last_report > std::chrono::milliseconds(200) || m == I.o.max_m)) {
        last_report = now;
        TunerProgress pr;
        pr.group = key.to_string();
        pr.m = m;
        pr.max_m = I.o.max_m;
        pr.best_gflops = I.best_gflops;
        pr.elapsed_s = std::chrono::duration<double>(now - t0).count();
        const double done = tuning_work(key, I.o, 1, m) - work_before;
        const double left = work_total - work_before - done;
        pr.remaining_s = done > 0 ? pr.elapsed_s * left / done : 0;
        progress(pr);
      }
    }
  } catch (const Stopped&) {
  }
  I.stop = nullptr;
  I.stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sandwich::tuner
