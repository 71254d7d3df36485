// The GEMM driver: runs a schedule (micro-kernel, slice, thread grid) over packed weights.
//
// One parallel region per call: the threads pack the activations into micro-kernel panels
// (skipped for small M, where the caller does it before the region), meet at a barrier, then
// each works through its share of rows x panels x K in slices; split-k shares meet again to
// reduce. The fused epilogues (residual add, SiLU*mul of a gate/up pair) are applied while a
// slice of C is still in L2.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/partition.h"
#include "kernels/cpu_features.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "kernels/tuned_schedules.h"
#include "quant_layout.h"
#include "scratch_buffer.h"

namespace sandwich::kernels {
namespace {

// Per-thread C slice buffers (the gate/up pair needs two); team threads live as long as the
// team, so these are allocated once.
thread_local ScratchBuffer tls_gate, tls_up;
// Buffers the calling thread owns and its team shares through the job: packed activations and
// split-k partial sums.
thread_local ScratchBuffer shared_a, shared_partial;

// Activations packed by the caller instead of by the team when this small (elements): saves a
// barrier, which costs more than the copy.
constexpr int64_t kCallerPacksBelow = 1 << 15;

struct Job {
  const PackedWeight* w;
  const PackedWeight* up;  // the gate/up pair when set
  GemmArgs a;
  int64_t n1, ncols;  // resolved column end, n1 - n0
  int64_t kk;         // K width of the range [k0, k1)
  int64_t steps;      // K steps of the range (the last one zero-padded)
  int64_t step0;      // k0 / g: the range's first step inside a panel
  int64_t p0, p1;     // panel range
  int g;              // K elements per step
  size_t a_es, w_es;  // element sizes of packed activations and weights
  Schedule s;
  const MicroKernel* tiles[32] = {};  // by height, all of width s.un
  bool one_set = false;               // run the tiles' one_set variants (batch-invariant)
  unsigned char* A;  // packed activations: rows [r, r + h) start at element r * steps * g
  float* partial;    // split-k: (tk - 1) x m x (p1 - p0) * 64 sums of K shares 1..tk-1
};

const unsigned char* b_at(const Job& j, const PackedWeight& w, int64_t p, int64_t step, int c0) {
  return static_cast<const unsigned char*>(w.data) + static_cast<size_t>(p) * w.panel_bytes() +
         (static_cast<size_t>(j.step0 + step) * kPanel * j.g + static_cast<size_t>(c0) * j.g) *
             j.w_es;
}

const unsigned char* a_at(const Job& j, int64_t r, int h, int64_t step) {
  return j.A +
         (static_cast<size_t>(r) * j.steps * j.g + static_cast<size_t>(step) * h * j.g) * j.a_es;
}

// C[rows r0..r0+mb) x panel p] (=|+=) A * B over K steps [s0, s0 + sc), into c (row stride
// ldc). The B chunk (sc steps x un columns) stays in L1 while the tiles sweep down the rows.
// Meanwhile the tiles fetch the chunk the thread needs next (`next`, same size, or null) into
// L2 from inside their step loops, spread evenly: one tile alone fetches 4 lines a step (a
// whole panel row: decode streams at DRAM bandwidth this way), two or three tiles 2 each,
// more tiles 1 each until the chunk is covered. The next chunk then arrives while this one is
// computed instead of stalling the first tile that needs it.
void run_block(const Job& j, const PackedWeight& w, int64_t p, int64_t r0, int64_t mb, int64_t s0,
               int64_t sc, float* c, int64_t ldc, bool accumulate, const unsigned char* next) {
  const Schedule& s = j.s;
  const int64_t tiles = (mb + s.um - 1) / s.um * (kPanel / s.un);
  const int rate_idx = tiles == 1 ? 3 : tiles < 4 ? 2 : 1;  // fn[i] fetches 2^(i-1) lines a step
  const size_t per_tile = static_cast<size_t>(sc) * 64 << (rate_idx - 1);
  const size_t chunk = static_cast<size_t>(sc) * 4 * 64;  // a K step of a panel is 4 lines
  size_t fetched = 0;
  const int64_t m_end = r0 + mb;
  for (int c0 = 0; c0 < kPanel; c0 += s.un) {
    const void* b = b_at(j, w, p, s0, c0);
    for (int64_t r = r0; r < m_end; r += s.um) {
      const int h = static_cast<int>(std::min<int64_t>(s.um, j.a.m - r));
      const bool fetch = next && fetched < chunk;
      const MicroKernelFn* fn = j.one_set ? j.tiles[h]->one_set : j.tiles[h]->fn;
      fn[fetch ? rate_idx : 0](a_at(j, r, h, s0), b, sc, c + (r - r0) * ldc + c0, ldc, accumulate,
                               fetch ? next + fetched : nullptr);
      if (fetch) fetched += per_tile;
    }
  }
}

// Row stride of a C slice buffer `width` floats wide: padded off multiples of 4 KiB, whose rows
// would share L1 sets.
int64_t slice_stride(int64_t width) {
  return width % 1024 == 0 ? width + 16 : width;
}

// Writes a finished C slice (rows x width, row stride ldc) to y's columns [0, valid) with the
// epilogue: store, add (residual or split-k partial), or silu(gate) * up.
void write_slice(const float* c, const float* up, int64_t ldc, int64_t rows, int64_t valid,
                 float* y, int64_t ldy, bool add) {
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ldy;
    const float* cr = c + r * ldc;
    if (up) {
      silu_mul(cr, up + r * ldc, yr, valid);
    } else if (add) {
      for (int64_t i = 0; i < valid; ++i) yr[i] += cr[i];
    } else {
      std::memcpy(yr, cr, static_cast<size_t>(valid) * 4);
    }
  }
}

// One thread's share: rows [mlo, mhi) in whole tiles, panels [plo, phi), K steps [slo, shi),
// in slices of bm rows x bn columns. Within a slice the K blocks run outermost, so the A block
// (bm x bk) stays in L2 for every panel of the slice, and C accumulates in a per-thread slice
// buffer that stays in L2 across the blocks; the slice goes to y once, through the epilogue.
// (C computed in y itself thrashes L2 when y's row stride is a power of two: measured 5%.)
// `y`/`ldy`/`add` say where this share's C goes: the output, or a split-k partial buffer.
void thread_body(const Job& j, int tid, float* y, int64_t ldy, bool add) {
  const Schedule& s = j.s;
  const int im = tid / (s.tn * s.tk), in = (tid / s.tk) % s.tn, ik = tid % s.tk;
  const int64_t m_tiles = (j.a.m + s.um - 1) / s.um;
  const int64_t mlo = std::min(j.a.m, m_tiles * im / s.tm * s.um);
  const int64_t mhi = std::min(j.a.m, m_tiles * (im + 1) / s.tm * s.um);
  const int64_t slo = j.steps * ik / s.tk, shi = j.steps * (ik + 1) / s.tk;
  if (mlo >= mhi || slo >= shi) return;
  const int64_t bm = std::max<int64_t>(s.um, s.bm / s.um * s.um);
  const int64_t bn_panels = std::max<int64_t>(1, s.bn / kPanel);
  const int64_t bsteps = std::max<int64_t>(1, s.bk / j.g);
  // This thread's slices of columns, in order: (first panel, panels).
  thread_local std::vector<std::pair<int64_t, int64_t>> slices;
  slices.clear();
  const int64_t np = j.p1 - j.p0;
  const int64_t plo = j.p0 + np * in / s.tn, phi = j.p0 + np * (in + 1) / s.tn;
  for (int64_t pp = plo; pp < phi; pp += bn_panels)
    slices.emplace_back(pp, std::min(bn_panels, phi - pp));
  if (slices.empty()) return;
  int64_t widest = 0;
  for (auto& sl : slices) widest = std::max(widest, sl.second);
  const int64_t ldc = slice_stride(widest * kPanel);
  const size_t c_bytes = static_cast<size_t>(std::min(bm, mhi - mlo) * ldc) * 4;
  float* cbuf = static_cast<float*>(tls_gate.get(c_bytes));
  float* ubuf = j.up ? static_cast<float*>(tls_up.get(c_bytes)) : nullptr;

  for (int64_t m0 = mlo; m0 < mhi; m0 += bm) {
    const int64_t mb = std::min(bm, mhi - m0);
    for (size_t si = 0; si < slices.size(); ++si) {
      const auto [pp, pn] = slices[si];
      for (int64_t kb = slo; kb < shi; kb += bsteps) {
        const int64_t sc = std::min(bsteps, shi - kb);
        for (int64_t p = pp; p < pp + pn; ++p) {
          // The chunk this thread reads after this one, in loop order.
          const unsigned char* next = nullptr;
          if (s.prefetch) {
            if (p + 1 < pp + pn)
              next = b_at(j, *j.w, p + 1, kb, 0);
            else if (kb + bsteps < shi)
              next = b_at(j, *j.w, pp, kb + bsteps, 0);
            else if (si + 1 < slices.size())
              next = b_at(j, *j.w, slices[si + 1].first, slo, 0);
            else if (m0 + bm < mhi)
              next = b_at(j, *j.w, slices[0].first, slo, 0);
          }
          const int64_t off = (p - pp) * kPanel;
          if (j.up) {
            run_block(j, *j.w, p, m0, mb, kb, sc, cbuf + off, ldc, kb != slo,
                      s.prefetch ? b_at(j, *j.up, p, kb, 0) : nullptr);
            // The pair's next gate chunk: the same offset in the gate weights.
            run_block(j, *j.up, p, m0, mb, kb, sc, ubuf + off, ldc, kb != slo, next);
          } else {
            run_block(j, *j.w, p, m0, mb, kb, sc, cbuf + off, ldc, kb != slo, next);
          }
        }
      }
      const int64_t col0 = pp * kPanel - j.a.n0;
      write_slice(cbuf, ubuf, ldc, mb, std::min(pn * kPanel, j.ncols - col0), y + m0 * ldy + col0,
                  ldy, add);
    }
  }
}

// Packs activation panels [t0, t1) (panel t: rows [t * um, min(m, (t + 1) * um))).
void pack_panels(const Job& j, int64_t t0, int64_t t1) {
  const int um = j.s.um;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t r = t * um, h = std::min<int64_t>(um, j.a.m - r);
    pack_activations(j.s.isa, j.w->dtype, j.a.x + r * j.a.ldx, j.a.ldx, h, j.kk, j.steps,
                     j.A + static_cast<size_t>(r) * j.steps * j.g * j.a_es);
  }
}

void run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& args, ThreadTeam& team,
         const Schedule* schedule) {
  if (w.qtype) return quant_gemm_run(w, up, args, team, schedule);
  Job j;
  j.w = &w;
  j.up = up;
  j.a = args;
  j.n1 = args.n1 < 0 ? w.n : args.n1;
  const int64_t k1 = args.k1 < 0 ? w.k : args.k1;
  if (!w.data)
    throw std::invalid_argument("gemm: the weight has no buffer (set PackedWeight::data)");
  if (w.dtype != DType::F32 && w.dtype != DType::BF16)
    throw std::invalid_argument("gemm: weights must be f32 or bf16");
  if (args.m < 0) throw std::invalid_argument("gemm: negative m");
  if (args.n0 < 0 || args.n0 >= j.n1 || j.n1 > w.n || args.n0 % shard_granularity_n(w) != 0)
    throw std::invalid_argument("gemm: output columns [" + std::to_string(args.n0) + ", " +
                                std::to_string(j.n1) + ") must lie in the weight's " +
                                std::to_string(w.n) + " and start on a multiple of " +
                                std::to_string(shard_granularity_n(w)));
  if (args.k0 < 0 || args.k0 >= k1 || k1 > w.k || args.k0 % shard_granularity_k(w) != 0)
    throw std::invalid_argument("gemm: input columns [" + std::to_string(args.k0) + ", " +
                                std::to_string(k1) + ") must lie in the weight's " +
                                std::to_string(w.k) + " and start on a multiple of " +
                                std::to_string(shard_granularity_k(w)));
  if (args.m == 0) return;
  if (!args.x || !args.y || args.ldx < k1 - args.k0 || args.ldy < j.n1 - args.n0)
    throw std::invalid_argument(
        "gemm: x and y must be set, with ldx >= k1 - k0 and ldy >= n1 - n0");
  j.g = k_group(w.dtype);
  j.kk = k1 - args.k0;
  j.steps = (j.kk + j.g - 1) / j.g;
  j.step0 = args.k0 / j.g;
  j.ncols = j.n1 - args.n0;
  j.p0 = args.n0 / kPanel;
  j.p1 = (j.n1 + kPanel - 1) / kPanel;
  const GemmShape shape{
      args.m, j.ncols, j.kk, w.dtype, team.size(), up != nullptr, args.batch_invariant};
  if (schedule) {
    validate_schedule(shape, *schedule);
    j.s = *schedule;
  } else {
    j.s = planned_schedule(shape);
  }
  // The fused epilogue needs whole sums, and a batch-invariant sum one order: no split-k.
  if (up || args.batch_invariant || args.no_split_k) j.s = without_split_k(j.s, args.m, j.ncols);
  j.one_set = args.batch_invariant;
  for (int h = 1; h <= j.s.um; ++h) j.tiles[h] = find_microkernel(j.s.isa, w.dtype, h, j.s.un);
  j.a_es = dtype_size(activation_type(j.s.isa, w.dtype));
  j.w_es = dtype_size(w.dtype);
  j.A = static_cast<unsigned char*>(
      shared_a.get(static_cast<size_t>(args.m) * j.steps * j.g * j.a_es + 64));
  const int64_t a_panels = (args.m + j.s.um - 1) / j.s.um;
  const bool caller_packs = args.m * j.kk < kCallerPacksBelow || team.size() == 1;
  if (caller_packs) pack_panels(j, 0, a_panels);
  const int tk = j.s.tk;
  const int64_t pwidth = (j.p1 - j.p0) * kPanel;
  j.partial = tk > 1 ? static_cast<float*>(
                           shared_partial.get(static_cast<size_t>(tk - 1) * args.m * pwidth * 4))
                     : nullptr;
  const bool y_acc = args.epilogue == Epilogue::Accumulate;
  team.run([&](int tid, int nt) {
    if (!caller_packs) {
      const IndexRange mine = partition(a_panels, tid, nt);
      pack_panels(j, mine.begin, mine.end);
      team.barrier();
    }
    const int ik = tid % tk;
    if (ik == 0) {
      thread_body(j, tid, args.y, args.ldy, y_acc);
    } else {
      // Column c of a partial buffer is output column c (n0 is a panel boundary).
      float* part = j.partial + static_cast<size_t>(ik - 1) * args.m * pwidth;
      thread_body(j, tid, part, pwidth, false);
    }
    if (tk == 1) return;
    team.barrier();
    // Reduce: rows split over all threads; y (holding K share 0) += the other shares.
    const IndexRange rows = partition(args.m, tid, nt);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      float* yr = args.y + r * args.ldy;
      for (int t = 1; t < tk; ++t) {
        const float* pr = j.partial + (static_cast<size_t>(t - 1) * args.m + r) * pwidth;
        for (int64_t c = 0; c < j.ncols; ++c) yr[c] += pr[c];
      }
    }
  });
}

}  // namespace

int64_t shard_granularity_n(const PackedWeight& w) {
  return w.panel > 0 ? w.panel : kPanel;
}
int64_t shard_granularity_k(const PackedWeight& w) {
  if (w.qtype) return qtype_info(*w.qtype).block_elems;
  return k_group(w.dtype);
}

void gemm(const PackedWeight& w, const GemmArgs& a, ThreadTeam& team, const Schedule* schedule) {
  run(w, nullptr, a, team, schedule);
}

void gemm_silu_mul(const PackedWeight& gate, const PackedWeight& up, const GemmArgs& a,
                   ThreadTeam& team, const Schedule* schedule) {
  if (gate.n != up.n || gate.k != up.k || gate.dtype != up.dtype || gate.qtype != up.qtype)
    throw std::invalid_argument("gemm_silu_mul: gate and up differ in shape or type");
  if (!up.data) throw std::invalid_argument("gemm_silu_mul: the up weight has no buffer");
  run(gate, &up, a, team, schedule);
}

}  // namespace sandwich::kernels
