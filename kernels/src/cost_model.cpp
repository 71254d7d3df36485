// The roofline cost model that proposes a default schedule for any GEMM shape.
//
// A schedule's time is that of its busiest thread: the micro-kernel steps it runs (at the
// tile's cost per step: FMA throughput, FMA latency, loads) plus per-call overhead, against
// the bytes it must bring from DRAM (weights once per row block, activations and C slices
// when they overflow L2) at its share of the bandwidth. Candidates: every tile of the ISA no
// taller than M, every thread grid, a few K blocks; slices are sized to the caches by rule.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/microkernel.h"
#include "kernels/schedule.h"

namespace sandwich::kernels {

MachineModel& machine_model() {
  static MachineModel m = [] {
    MachineModel d;
    // SANDWICH_SKINNY_HW_PREFETCH=0|1 forces the vendor correction either way: what the tuner
    // must recover by measuring when the hand correction is wrong.
    if (const char* v = std::getenv("SANDWICH_SKINNY_HW_PREFETCH"); v && (*v == '0' || *v == '1'))
      d.skinny_hw_prefetch = *v == '1';
    return d;
  }();
  return m;
}

namespace {

int lanes(Isa isa) {
  return isa == Isa::Avx512Bf16 || isa == Isa::Avx512 ? 16 : isa == Isa::Avx2 ? 8 : 1;
}

// Cycles of one K step of a tile: FMA throughput (2 pipes), the FMA latency chain (6 cycles per
// accumulator set), and loads (B vectors plus one broadcast per row, 2 per cycle).
double step_cycles(const MicroKernel& k, int acc_sets) {
  if (k.isa == Isa::Scalar) return 1.0 * k.um * k.un * k_group(k.weights);
  const int v = k.un / lanes(k.isa);
  const bool widen = k.isa == Isa::Avx2 && k.weights == DType::BF16;
  const double fmas = k.um * v * (widen ? 2.0 : 1.0);
  const double loads = v + k.um * (widen ? 2.0 : 1.0);
  return std::max({fmas / 2.0, 6.0 * (widen ? 2.0 : 1.0) / acc_sets, loads / 2.0});
}
// The step cost of the variant a shape runs: batch-invariant GEMMs run the one-set kernels.
double step_cycles(const MicroKernel& k, const GemmShape& s) {
  return step_cycles(k, s.batch_invariant ? 1 : k.acc_sets);
}

// Cycles of a call besides its steps: loading and storing the C tile, the call itself.
double call_cycles(const MicroKernel& k) {
  return 20.0 + 2.0 * k.um * k.un / lanes(k.isa);
}

struct Share {
  double m, panels, steps;
};

// The busiest thread's rows (whole tiles), panels and K steps.
Share busiest(const GemmShape& s, const Schedule& c) {
  const double g = k_group(s.weights);
  const double m_tiles = std::ceil(double(s.m) / c.um);
  const double panels = std::ceil(double(s.n) / kPanel);
  const double steps = std::ceil(s.k / g);
  return {std::min<double>(s.m, std::ceil(m_tiles / c.tm) * c.um), std::ceil(panels / c.tn),
          std::ceil(steps / c.tk)};
}

}  // namespace

double predict_seconds(const GemmShape& s, const Schedule& c) {
  const MicroKernel* k = find_microkernel(c.isa, s.weights, c.um, c.un);
  if (!k || c.tm * c.tn * c.tk != s.threads) return 1e30;
  const MachineModel& mm = machine_model();
  const Share sh = busiest(s, c);
  const double g = k_group(s.weights);
  const double wes = dtype_size(s.weights), aes = dtype_size(activation_type(c.isa, s.weights));
  const double mats = s.pair ? 2.0 : 1.0;
  const double bk_steps = std::max(1.0, std::floor(c.bk / g));
  const double k_blocks = std::ceil(sh.steps / bk_steps);
  const double subpanels = kPanel / c.un;

  // Compute: full tiles at this tile's step cost, the last (shorter) tile at its own.
  const double full = std::floor(sh.m / c.um), tail = sh.m - full * c.um;
  double tile_cycles = full * step_cycles(*k, s);
  if (tail > 0) {
    const MicroKernel* t = find_microkernel(c.isa, s.weights, static_cast<int>(tail), c.un);
    tile_cycles += t ? step_cycles(*t, s) : step_cycles(*k, s);
  }
  const double calls = std::ceil(sh.m / c.um) * subpanels * sh.panels * k_blocks * mats;
  double cycles = tile_cycles * subpanels * sh.panels * sh.steps * mats + calls * call_cycles(*k);
  // A B sub-chunk that does not fit beside the A and C streams in L1 is re-read from L2 by every
  // tile of the sweep; L2 delivers about 32 bytes a cycle.
  const double chunk = bk_steps * c.un * g * wes;
  if (chunk > mm.l1_bytes / 2 && sh.m > c.um) {
    const double l2_cycles = c.un * g * wes / 32.0;  // per step of a tile
    cycles += std::max(0.0, l2_cycles - step_cycles(*k, s) * 0.5) * std::ceil(sh.m / c.um) *
              subpanels * sh.panels * sh.steps * mats;
  }
  const double t_compute = cycles / mm.clock_hz;

  // DRAM: the weights once per row block, the activations once per slice column when they do
  // not stay in L2, and C slices that overflow L2 once per K block.
  const double m_blocks = std::ceil(sh.m / std::max<double>(c.bm, 1));
  const double w_bytes = sh.panels * kPanel * sh.steps * g * wes * m_blocks * mats;
  const double a_bytes = sh.m * sh.steps * g * aes;
  const double n_slices = std::ceil(sh.panels * kPanel / c.bn);
  const double a_traffic = a_bytes * (a_bytes > mm.l2_bytes / 2 ? n_slices : 1.0);
  const double c_slice =
      std::min<double>(c.bm, sh.m) * std::min<double>(c.bn, sh.panels * kPanel) * 4.0 * mats;
  const double c_traffic = c_slice > mm.l2_bytes / 2
                               ? sh.m * sh.panels * kPanel * 4.0 * mats * 2.0 * k_blocks
                               : sh.m * sh.panels * kPanel * 4.0;
  const double bw = std::min(mm.dram_bytes_per_s_per_core, mm.dram_bytes_per_s_total / s.threads);
  const double t_mem = (w_bytes + a_traffic + c_traffic) / bw;

  const double t_reduce = c.tk > 1 ? (c.tk - 1) * double(s.m) * sh.panels * c.tn * kPanel * 4.0 *
                                         2 / mm.dram_bytes_per_s_total
                                   : 0.0;
  return std::max(t_compute, t_mem) + 0.05 * std::min(t_compute, t_mem) + t_reduce +
         mm.region_overhead_s * (c.tk > 1 ? 2 : 1);
}

namespace {

Schedule choose(const GemmShape& s) {
  const Isa isa = gemm_isa(s.weights);
  const MachineModel& mm = machine_model();
  const int64_t panels = (s.n + kPanel - 1) / kPanel;
  const int g = k_group(s.weights);
  const int64_t steps = (s.k + g - 1) / g;
  const double wes = dtype_size(s.weights), aes = dtype_size(activation_type(isa, s.weights));
  Schedule best;
  double best_t = 1e30;
  for (const MicroKernel& k : microkernel_table()) {
    if (k.isa != isa || k.weights != s.weights || k.um > std::max<int64_t>(s.m, 1) ||
        !cpu_has(k.isa))
      continue;
    for (int tm = 1; tm <= s.threads; ++tm)
      for (int tk = 1; tm * tk <= s.threads; ++tk) {
        if (s.threads % (tm * tk)) continue;
        const int tn = s.threads / (tm * tk);
        if (tn > panels || (tk > 1 && (steps < 256 * tk || s.pair || s.batch_invariant))) continue;
        Schedule c;
        c.isa = isa;
        c.um = k.um;
        c.un = k.un;
        c.tm = tm;
        c.tn = tn;
        c.tk = tk;
        const Share sh = busiest(s, c);
        const int64_t my_steps = static_cast<int64_t>(sh.steps);
        // K blocks whose B chunk (4 lines a step) fits L1 or at least L2 beside the next one.
        const std::vector<int64_t> bk_steps = {64, 128, 256, 512};
        for (int64_t bks : bk_steps) {
          bks = std::min(bks, my_steps);
          {
            c.bk = bks * g;
            // A block (bm x bk) within a quarter of L2, C slice (bm x bn) within another quarter.
            const double a_row = bks * g * aes;
            int64_t bm = static_cast<int64_t>(mm.l2_bytes / 4 / a_row) / k.um * k.um;
            bm = std::clamp<int64_t>(bm, k.um, static_cast<int64_t>(std::ceil(sh.m / k.um)) * k.um);
            c.bm = bm;
            int64_t bn = static_cast<int64_t>(mm.l2_bytes / 4 / (4.0 * bm * (s.pair ? 2 : 1))) /
                         kPanel * kPanel;
            c.bn = std::clamp<int64_t>(bn, kPanel, static_cast<int64_t>(sh.panels) * kPanel);
            // Equal slices: a short last slice re-streams the A block for little work (measured
            // 666 -> 786 GFLOPS at 128x1152x2304 with 9 panels a thread as one slice, not 7 + 2).
            const int64_t my_panels = static_cast<int64_t>(sh.panels);
            const int64_t n_slices = (my_panels * kPanel + c.bn - 1) / c.bn;
            c.bn = (my_panels + n_slices - 1) / n_slices * kPanel;
            // Decode streams panel after panel: one panel per slice keeps the stream sequential.
            if (sh.m <= k.um) c.bn = kPanel;
            // One or two rows: on some CPUs long K blocks left to the hardware prefetcher
            // stream fastest (see MachineModel::skinny_hw_prefetch).
            if (s.m <= 2 && mm.skinny_hw_prefetch) {
              c.bk = std::min<int64_t>(1024, my_steps) * g;
              c.prefetch = false;
            }
            const double t = predict_seconds(s, c);
            if (t < best_t * 0.999) {
              best_t = t;
              best = c;
            }
            (void)wes;
          }
        }
      }
  }
  if (best_t >= 1e30)
    throw std::runtime_error("no micro-kernel for " + std::string(dtype_name(s.weights)) +
                             " weights on this CPU");
  return best;
}

}  // namespace

Schedule default_schedule(const GemmShape& s) {
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.threads < 1)
    throw std::invalid_argument("default_schedule: m, n, k and threads must be positive");
  if (s.qtype) return default_quant_schedule(quant_shape_of(s));
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, int, int, bool, bool>, Schedule> cache;
  const auto key = std::make_tuple(s.m, s.n, s.k, static_cast<int>(s.weights), s.threads, s.pair,
                                   s.batch_invariant);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const Schedule c = choose(s);
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, c);
  return c;
}

}  // namespace sandwich::kernels
