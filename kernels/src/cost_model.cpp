// The roofline cost model that proposes a default schedule for any GEMM shape.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "kernels/microkernel.h"
#include "kernels/schedule.h"

namespace sandwich::kernels {

MachineModel& machine_model() {
  static MachineModel m;
  return m;
}

std::string Schedule::to_string() const {
  std::ostringstream os;
  os << isa_name(isa) << " " << um << "x" << un << " slice " << bm << "x" << bn << "x" << bk << " threads " << tm << "x"
     << tn << "x" << tk;
  return os.str();
}

void validate_schedule(const GemmShape& s, const Schedule& c) {
  auto bad = [&](const std::string& why) { throw std::invalid_argument("schedule " + c.to_string() + ": " + why); };
  if (!find_microkernel(c.isa, s.weights, c.um, c.un)) bad("no such micro-kernel on this CPU");
  if (c.tm < 1 || c.tn < 1 || c.tk < 1 || c.tm * c.tn * c.tk != s.threads)
    bad("the thread grid must multiply to " + std::to_string(s.threads));
  if (c.bm < 1 || c.bn < kPanel || c.bn % kPanel != 0) bad("bn must be a positive multiple of 64");
  if (c.bk < 2 || c.bk % 2 != 0) bad("bk must be even and at least 2");
  // Every smaller tile height of the same width must exist for the M tails.
  for (int um = 1; um < c.um; ++um)
    if (!find_microkernel(c.isa, s.weights, um, c.un)) bad("missing tail kernel " + std::to_string(um) + "x" + std::to_string(c.un));
}

namespace {

// Fraction of peak a tile reaches: FMA latency (6 cycles, 2 ports) needs 12 independent
// accumulators, and each B vector load feeds um FMAs.
double tile_efficiency(const MicroKernel& k) {
  const int vec = k.isa == Isa::Avx512Bf16 || k.isa == Isa::Avx512 ? 16 : 8;
  const int acc = k.um * (k.un / vec);
  const double latency = std::min(1.0, acc / 12.0);
  const double loads = std::min(1.0, 1.6 * k.um / (k.um + 1.0));  // broadcast + B loads per FMA
  return latency * std::min(1.0, loads) * 0.92;
}

double peak_per_core(const MicroKernel& k) {
  const MachineModel& mm = machine_model();
  if (k.isa == Isa::Avx512Bf16) return mm.peak_bf16_flops_per_core;
  if (k.isa == Isa::Avx512) return mm.peak_f32_flops_per_core;
  if (k.isa == Isa::Avx2) return mm.peak_f32_flops_per_core / 2;
  return 4e9;
}

}  // namespace

double predict_seconds(const GemmShape& s, const Schedule& c) {
  const MicroKernel* k = find_microkernel(c.isa, s.weights, c.um, c.un);
  if (!k) return 1e30;
  const MachineModel& mm = machine_model();
  const double panels = std::ceil(s.n / double(kPanel));
  // Work of the busiest thread: its share of panels, rows and K (rounded up: imbalance).
  const double my_panels = std::ceil(panels / c.tn);
  const double my_m = std::ceil(double(s.m) / c.tm);
  const double my_k = std::ceil(double(s.k) / c.tk);
  const double m_tiles = std::ceil(my_m / c.um) * c.um;  // tails run at the tile's cost
  const double flops = 2.0 * m_tiles * my_panels * kPanel * my_k;
  const double t_compute = flops / (peak_per_core(*k) * tile_efficiency(*k));
  // Weights stream once per M slice; every thread competes for DRAM.
  const double wbytes = my_panels * kPanel * my_k * dtype_size(s.weights) * std::ceil(my_m / std::max<int64_t>(c.bm, 1));
  const double bw = std::min(mm.dram_bytes_per_s_per_core, mm.dram_bytes_per_s_total / s.threads);
  const double t_mem = wbytes / bw;
  // Activations are re-read from L2 once per panel group.
  const double abytes = my_m * my_k * (k->isa == Isa::Avx512Bf16 ? 2 : 4) * std::ceil(my_panels * kPanel / c.bn);
  const double t_l2 = abytes / mm.l2_bytes_per_s;
  const double t_reduce = c.tk > 1 ? s.m * panels * kPanel * 4.0 * c.tk / (bw * s.threads) : 0.0;
  return std::max({t_compute, t_mem, t_l2}) + t_reduce + mm.region_overhead_s;
}

namespace {

Schedule choose(const GemmShape& s) {
  const Isa isa = gemm_isa(s.weights);
  // Every tile of this ISA no taller than M is a candidate (tails use smaller ones).
  std::vector<const MicroKernel*> tiles;
  for (const auto& k : microkernel_table())
    if (k.isa == isa && k.weights == s.weights) tiles.push_back(&k);
  Schedule best;
  double best_t = 1e30;
  const int64_t panels = (s.n + kPanel - 1) / kPanel;
  for (const MicroKernel* k : tiles) {
    if (k->um > std::max<int64_t>(s.m, 1)) continue;
    for (int tm = 1; tm <= s.threads; ++tm)
      for (int tk = 1; tm * tk <= s.threads; ++tk) {
        if (s.threads % (tm * tk)) continue;
        const int tn = s.threads / (tm * tk);
        if (tn > panels) continue;
        if (tk > 1 && s.k < 2048) continue;
        Schedule c;
        c.isa = isa;
        c.um = k->um;
        c.un = k->un;
        c.tm = tm;
        c.tn = tn;
        c.tk = tk;
        const int64_t my_m = (s.m + tm - 1) / tm;
        const int64_t wbytes = dtype_size(s.weights);
        // B chunk (bk x 64) in L1; the whole K when one M block covers all rows (decode).
        c.bm = my_m <= k->um ? my_m : std::min<int64_t>(my_m, std::max<int64_t>(k->um, 192 / k->um * k->um));
        c.bk = my_m <= k->um ? (s.k + 1) / 2 * 2 : (wbytes == 2 ? 256 : 128);
        // C slice bm x bn within ~128 KiB of L2.
        c.bn = std::max<int64_t>(kPanel, (128 * 1024 / (4 * std::max<int64_t>(c.bm, 1))) / kPanel * kPanel);
        c.bn = std::min<int64_t>(c.bn, ((panels + tn - 1) / tn) * kPanel);
        const double t = predict_seconds(s, c);
        if (t < best_t * 0.999) {
          best_t = t;
          best = c;
        }
      }
  }
  if (best_t >= 1e30) throw std::runtime_error("no micro-kernel for this GEMM on this CPU");
  return best;
}

}  // namespace

Schedule default_schedule(const GemmShape& s) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, int, int>, Schedule> cache;
  const auto key = std::make_tuple(s.m, s.n, s.k, static_cast<int>(s.weights), s.threads);
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
