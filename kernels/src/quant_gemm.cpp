// The GEMM of quantized weights: gemm() and gemm_silu_mul() come here when the weight has a
// qtype. Two paths, chosen by the schedule (Schedule::unpack_bf16):
//  - integer: the activations are quantized to int8 per 32 k once per call, then each thread
//    runs the integer kernels over its panels, um activation rows per weight load, in blocks
//    of bm rows whose int8 activations stay in L2 while the panels stream past;
//  - BF16: chunks of bn rows are widened to a BF16 packed weight and multiplied by the BF16
//    GEMM (its micro-kernels and schedules).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/partition.h"
#include "isa_table.h"
#include "kernels/cpu_features.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/tuned_schedules.h"
#include "quant_layout.h"
#include "scratch_buffer.h"

namespace sandwich::kernels {
namespace {

thread_local ScratchBuffer tls_acts, tls_gate_bf16, tls_up_bf16, tls_rows, tls_gate_c, tls_up_c;

// Activations quantized by the caller instead of the team below this many elements: a barrier
// costs more than the work.
constexpr int64_t kCallerQuantizesBelow = 1 << 14;

struct QuantJob {
  const PackedWeight* w;
  const PackedWeight* up;
  GemmArgs a;
  int64_t n1, k1, kk, ncols;
  int64_t p0, p1;  // panels
  QLayout l;
  Schedule s;
  QKernelFn fns[9] = {};     // the tile kernels by height
  QKernelFn fns_pf[9] = {};  // the same, prefetching: for a panel's first tile, which streams it
  QActs acts;
  std::atomic<int64_t> cursor{0};  // the next panel (from p0) for panels_on_demand
};

const uint8_t* panel_at(const QuantJob& j, const PackedWeight& w, int64_t p) {
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes() +
         static_cast<size_t>(j.a.k0 / j.l.block_elems) * j.l.bytes;
}

// One slice: rows [m0, m0 + mb) x panels [pp, pp + pn); the K blocks (bk) run outermost, so the
// slice's int8 activations (bm x bk) stay in L2 for all its panels while a panel's weights
// (16 x bk) stay in L1 for all its tiles. The kernels continue each output's sum from the last K
// block, so the bits do not depend on bk. C accumulates in a per-thread slice buffer, then goes
// to y once, through the epilogue.
void run_slice(const QuantJob& j, int64_t m0, int64_t mb, int64_t pp, int64_t pn, float* gate,
               float* up) {
  const Schedule& s = j.s;
  const int be = j.l.block_elems;
  const int64_t blocks = j.kk / be;
  const int64_t bk = std::max<int64_t>(1, s.bk / be);  // blocks
  for (int64_t kb = 0; kb < blocks; kb += bk) {
    const int64_t kc = std::min(bk, blocks - kb);
    for (int64_t p = pp; p < pp + pn; ++p) {
      const size_t w_off = static_cast<size_t>(kb) * j.l.bytes;
      for (int64_t r = m0; r < m0 + mb; r += s.um) {
        const int h = static_cast<int>(std::min<int64_t>(s.um, m0 + mb - r));
        QActs a = j.acts;
        a.q += r * j.kk + kb * be;
        a.d += r * (j.kk / 32) + kb * be / 32;
        a.s16 += r * (j.kk / 16) + kb * be / 16;
        a.ds += r * (j.kk / 32) + kb * be / 32;
        const size_t c_off = static_cast<size_t>(((p - pp) * mb + (r - m0)) * kQRows);
        const QKernelFn fn = r == m0 ? j.fns_pf[h] : j.fns[h];
        fn(panel_at(j, *j.w, p) + w_off, kc, a, gate + c_off, kb > 0);
        if (j.up) fn(panel_at(j, *j.up, p) + w_off, kc, a, up + c_off, kb > 0);
      }
    }
  }
  for (int64_t p = pp; p < pp + pn; ++p) {
    const int64_t col0 = p * kQRows - j.a.n0;
    const int64_t valid = std::min<int64_t>(kQRows, j.ncols - col0);
    for (int64_t m = 0; m < mb; ++m) {
      float* y = j.a.y + (m0 + m) * j.a.ldy + col0;
      const size_t c_off = static_cast<size_t>(((p - pp) * mb + m) * kQRows);
      const float* g = gate + c_off;
      if (j.up)
        silu_mul(g, up + c_off, y, valid);
      else if (j.a.epilogue == Epilogue::Accumulate)
        for (int64_t c = 0; c < valid; ++c) y[c] += g[c];
      else
        std::memcpy(y, g, static_cast<size_t>(valid) * 4);
    }
  }
}

// Whether the threads take the panels a chunk at a time from a shared cursor instead of a fixed
// share each: when every thread has all the rows in one slice height (decode), the panels are
// what memory-bound threads finish at different speeds. A panel's outputs do not depend on the
// thread that computes them, so neither do the bits.
bool panels_on_demand(const QuantJob& j) {
  return j.s.tm == 1 && j.s.tn > 1 && j.a.m <= std::max<int64_t>(j.s.um, j.s.bm / j.s.um * j.s.um);
}

// One thread's share: rows [mlo, mhi) in whole tiles, panels [plo, phi) (or chunks of panels
// taken on demand), in slices of bm rows x bn columns.
void integer_body(QuantJob& j, int tid) {
  const Schedule& s = j.s;
  const int im = tid / s.tn, in = tid % s.tn;
  const int64_t m_tiles = (j.a.m + s.um - 1) / s.um;
  const int64_t mlo = std::min(j.a.m, m_tiles * im / s.tm * s.um);
  const int64_t mhi = std::min(j.a.m, m_tiles * (im + 1) / s.tm * s.um);
  const int64_t np = j.p1 - j.p0;
  const int64_t plo = j.p0 + np * in / s.tn, phi = j.p0 + np * (in + 1) / s.tn;
  const bool on_demand = panels_on_demand(j);
  if (mlo >= mhi || (!on_demand && plo >= phi)) return;
  const int64_t bm = std::max<int64_t>(s.um, s.bm / s.um * s.um);
  const int64_t bn = std::max<int64_t>(1, s.bn / kQRows);  // panels
  const int64_t chunk =
      on_demand ? std::min(bn, std::max<int64_t>(1, (np + 4 * s.tn - 1) / (4 * s.tn))) : bn;
  const size_t c_floats = static_cast<size_t>(std::min(bm, mhi - mlo) * chunk * kQRows);
  float* gate = static_cast<float*>(tls_gate_c.get(c_floats * 4));
  float* up = j.up ? static_cast<float*>(tls_up_c.get(c_floats * 4)) : nullptr;
  if (on_demand) {
    for (;;) {
      const int64_t pp = j.p0 + j.cursor.fetch_add(chunk, std::memory_order_relaxed);
      if (pp >= j.p1) return;
      run_slice(j, mlo, mhi - mlo, pp, std::min(chunk, j.p1 - pp), gate, up);
    }
  }
  for (int64_t m0 = mlo; m0 < mhi; m0 += bm)
    for (int64_t pp = plo; pp < phi; pp += bn)
      run_slice(j, m0, std::min(bm, mhi - m0), pp, std::min(bn, phi - pp), gate, up);
}

void run_integer(QuantJob& j, ThreadTeam& team) {
  const int64_t m = j.a.m, kk = j.kk;
  const size_t q_bytes = static_cast<size_t>(m * kk),
               f_bytes = static_cast<size_t>(m * kk / 32) * 4;
  auto round = [](size_t b) { return (b + 63) / 64 * 64; };
  auto* buf = static_cast<uint8_t*>(
      tls_acts.get(round(q_bytes) + round(f_bytes) + round(2 * f_bytes) + round(f_bytes)));
  auto* q = reinterpret_cast<int8_t*>(buf);
  auto* d = reinterpret_cast<float*>(buf + round(q_bytes));
  auto* s16 = reinterpret_cast<int32_t*>(reinterpret_cast<uint8_t*>(d) + round(f_bytes));
  auto* ds = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(s16) + round(2 * f_bytes));
  j.acts = QActs{q, d, s16, ds, kk};
  for (int h = 1; h <= j.s.um; ++h) {
    j.fns[h] = quant_kernel(j.s.isa, *j.w->qtype, h);
    j.fns_pf[h] = quant_kernel(j.s.isa, *j.w->qtype, h, j.s.prefetch);
  }
  const bool caller = m * kk < kCallerQuantizesBelow || team.size() == 1;
  auto quantize = [&](int64_t r0, int64_t r1) {
    quantize_activations(j.s.isa, j.a.x + r0 * j.a.ldx, j.a.ldx, r1 - r0, kk, q + r0 * kk,
                         d + r0 * (kk / 32), s16 + r0 * (kk / 16), ds + r0 * (kk / 32));
  };
  if (caller) quantize(0, m);
  team.run([&](int tid, int nt) {
    if (!caller) {
      const IndexRange mine = partition(m, tid, nt);
      quantize(mine.begin, mine.end);
      team.barrier();
    }
    integer_body(j, tid);
  });
}

// Rows [r0, r1) of w, k columns [k0, k0 + kk), as f32 (row stride kk).
void dequantize_rows(const PackedWeight& w, const QLayout& l, int64_t r0, int64_t r1, int64_t k0,
                     int64_t kk, float* out) {
  const QType t = *w.qtype;
  for (int64_t row = r0; row < r1; ++row) {
    const int r = static_cast<int>(row % kQRows);
    const uint8_t* panel =
        static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row / kQRows) * w.panel_bytes();
    float* o = out + (row - r0) * kk;
    for (int64_t b = k0 / l.block_elems; b < (k0 + kk) / l.block_elems; ++b) {
      const uint8_t* pb = panel + b * l.bytes;
      for (int u = 0; u < l.block_elems / l.unit; ++u) {
        float s, c;
        unit_scale(t, pb, r, u, &s, &c);
        for (int e = u * l.unit; e < (u + 1) * l.unit; ++e)
          *o++ = s * static_cast<float>(stored_value(l, pb, r, e) - l.offset) + c;
      }
    }
  }
}

// Widens rows [c0, c0 + rows) of w (the job's K range) into bw over the team.
void widen_chunk(const QuantJob& j, const PackedWeight& w, const PackedWeight& bw, int64_t c0,
                 ThreadTeam& team) {
  team.parallel_for(bw.panels(), [&](int64_t b, int64_t e, int) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t r0 = p * bw.panel, r1 = std::min(bw.n, r0 + bw.panel);
      auto* rows = static_cast<float*>(tls_rows.get(static_cast<size_t>((r1 - r0) * j.kk) * 4));
      dequantize_rows(w, j.l, c0 + r0, c0 + r1, j.a.k0, j.kk, rows);
      pack_weight_rows(bw, rows, DType::F32, j.kk, r0, r1, nullptr);
    }
  });
}

void run_bf16(const QuantJob& j, ThreadTeam& team) {
  // Chunks of whole 64-row BF16 panels.
  const int64_t chunk = std::max<int64_t>(kPanel, j.s.bn / kPanel * kPanel);
  for (int64_t c0 = j.a.n0; c0 < j.n1; c0 += chunk) {
    const int64_t rows = std::min(chunk, j.n1 - c0);
    PackedWeight g = plan_packed_weight(rows, j.kk, DType::BF16);
    g.data = tls_gate_bf16.get(g.bytes);
    widen_chunk(j, *j.w, g, c0, team);
    GemmArgs a = j.a;
    a.y = j.a.y + (c0 - j.a.n0);
    a.n0 = 0;
    a.n1 = -1;
    a.k0 = 0;
    a.k1 = -1;
    // The cost model's BF16 schedule, as the tuner measured this path with: a table tuned for a
    // quantized model has no BF16 entries to look up.
    const Schedule inner =
        default_schedule(GemmShape{a.m, rows, j.kk, DType::BF16, team.size(), j.up != nullptr});
    if (j.up) {
      PackedWeight u = g;
      u.data = tls_up_bf16.get(u.bytes);
      widen_chunk(j, *j.up, u, c0, team);
      gemm_silu_mul(g, u, a, team, &inner);
    } else {
      gemm(g, a, team, &inner);
    }
  }
}

}  // namespace

namespace {

const QuantKernels& quant_kernels(Isa isa) {
  return isa >= Isa::Avx512 ? kQuantAvx512 : isa == Isa::Avx2 ? kQuantAvx2 : kQuantScalar;
}

}  // namespace

int quant_max_rows(Isa isa) {
  return quant_kernels(isa).max_rows;
}

bool quant_isa_usable(Isa isa) {
  if (!cpu_has(isa)) return false;
  return isa < Isa::Avx512 || cpu_has_avx512_vnni();
}

QKernelFn quant_kernel(Isa isa, QType t, int rows, bool prefetch) {
  if (!quant_isa_usable(isa)) return nullptr;
  return quant_kernels(isa).kernel(t, rows, prefetch);
}

// The widest quantizer up to `isa` that this CPU runs (they all give the same bits; the
// AVX-512 one needs no VNNI).
void quantize_activations(Isa isa, const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16, float* ds) {
  pick_isa_table({&kQuantAvx512, &kQuantAvx2, &kQuantScalar}, [&](const QuantKernels& k) {
    return k.isa <= isa;
  }).quantize_activations(x, ldx, rows, kk, q, d, s16, ds);
}

Isa quant_gemm_isa() {
  for (Isa isa : {Isa::Avx512, Isa::Avx2})
    if (quant_isa_usable(isa)) return isa;
  return Isa::Scalar;
}

Schedule default_quant_schedule(const QuantShape& q) {
  Schedule s;
  s.isa = quant_gemm_isa();
  s.un = kQRows;
  s.um = static_cast<int>(std::min<int64_t>(quant_max_rows(s.isa), std::max<int64_t>(1, q.m)));
  // Slices sized to L2 by rule: 16 tiles of rows (fewer if M is smaller), bm x bk int8
  // activations in a quarter of L2 (K in whole blocks), and the bm x bn f32 C slice in another.
  const double l2 = machine_model().l2_bytes;
  const int be = qtype_info(q.type).block_elems;
  s.bm = std::min<int64_t>(16 * s.um, (q.m + s.um - 1) / s.um * s.um);
  s.bk = std::clamp<int64_t>(static_cast<int64_t>(l2 / 4) / s.bm / be * be, be, q.k);
  s.bn = std::max<int64_t>(kPanel, static_cast<int64_t>(l2 / 4) / (s.bm * 4) / kPanel * kPanel);
  // Panels split over threads; rows too when there are fewer panels than threads.
  const int64_t panels = (q.n + kQRows - 1) / kQRows;
  s.tm = 1;
  s.tn = q.threads;
  if (panels < q.threads && q.m > 1)
    for (int tm = q.threads; tm > 1; --tm)
      if (q.threads % tm == 0 && panels >= q.threads / tm) {
        s.tm = tm;
        s.tn = q.threads / tm;
        break;
      }
  s.unpack_bf16 = false;
  return s;
}

void validate_quant_schedule(const QuantShape& q, const Schedule& c) {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument("schedule " + c.to_string() + " for " +
                                std::string(qtype_info(q.type).name) + " weights: " + why);
  };
  if (c.tm < 1 || c.tn < 1 || c.tk < 1 || c.tm > q.threads || c.tn > q.threads ||
      c.tk > q.threads || int64_t{c.tm} * c.tn * c.tk != q.threads)
    bad("the thread grid must multiply to the team's " + std::to_string(q.threads) + " threads");
  if (c.bn < kQRows || c.bn % kQRows != 0) bad("bn must be a positive multiple of 16");
  if (c.unpack_bf16) return;
  const int be = qtype_info(q.type).block_elems;
  if (c.bk < be || c.bk % be != 0)
    bad("bk must be a positive multiple of the block size " + std::to_string(be));
  if (!quant_isa_usable(c.isa))
    bad("this CPU cannot run the " + std::string(isa_name(c.isa)) +
        " integer kernels (AVX-512 needs VNNI)");
  if (c.un != kQRows) bad("the integer kernels are 16 columns wide");
  if (c.um < 1 || c.um > quant_max_rows(c.isa))
    bad("the tile must have 1 to " + std::to_string(quant_max_rows(c.isa)) + " rows");
  if (c.bm < c.um || c.bm % c.um != 0)
    bad("bm must be a positive multiple of the tile's " + std::to_string(c.um) + " rows");
}

void quant_gemm_run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& args,
                    ThreadTeam& team, const Schedule* schedule) {
  QuantJob j;
  j.w = &w;
  j.up = up;
  j.a = args;
  j.l = qlayout(*w.qtype);
  const QTypeInfo& info = qtype_info(*w.qtype);
  j.n1 = args.n1 < 0 ? w.n : args.n1;
  j.k1 = args.k1 < 0 ? w.k : args.k1;
  if (!w.data)
    throw std::invalid_argument("gemm: the weight has no buffer (set PackedWeight::data)");
  if (args.m < 0) throw std::invalid_argument("gemm: negative m");
  if (args.n0 < 0 || args.n0 >= j.n1 || j.n1 > w.n || args.n0 % kQRows != 0)
    throw std::invalid_argument("gemm: output columns [" + std::to_string(args.n0) + ", " +
                                std::to_string(j.n1) + ") must lie in the weight's " +
                                std::to_string(w.n) + " and start on a multiple of " +
                                std::to_string(kQRows) + " (a quantized panel)");
  if (args.k0 < 0 || args.k0 >= j.k1 || j.k1 > w.k || args.k0 % info.block_elems != 0 ||
      j.k1 % info.block_elems != 0)
    throw std::invalid_argument("gemm: input columns [" + std::to_string(args.k0) + ", " +
                                std::to_string(j.k1) + ") of a " + std::string(info.name) +
                                " weight would cut its blocks: a shard must start and end on a "
                                "multiple of the block size " +
                                std::to_string(info.block_elems) + " (and lie in the weight's " +
                                std::to_string(w.k) + ")");
  if (args.m == 0) return;
  j.kk = j.k1 - args.k0;
  j.ncols = j.n1 - args.n0;
  if (!args.x || !args.y || args.ldx < j.kk || args.ldy < j.ncols)
    throw std::invalid_argument(
        "gemm: x and y must be set, with ldx >= k1 - k0 and ldy >= n1 - n0");
  j.p0 = args.n0 / kQRows;
  j.p1 = (j.n1 + kQRows - 1) / kQRows;
  const QuantShape shape{args.m, j.ncols, j.kk, *w.qtype, team.size(), up != nullptr};
  if (schedule) {
    validate_quant_schedule(shape, *schedule);
    j.s = *schedule;
  } else {
    j.s = planned_schedule(shape);  // the installed table's for this type and M, else the rule's
  }
  // A batch-invariant call stays on the integer path, whose bits do not depend on M: a
  // schedule that switched paths by M would change a row's output with the batch.
  if (args.batch_invariant && j.s.unpack_bf16) j.s = default_quant_schedule(shape);
  j.s.tn *= j.s.tk;  // no split-k: every output sums its units in k order
  j.s.tk = 1;
  if (j.s.unpack_bf16)
    run_bf16(j, team);
  else
    run_integer(j, team);
}

}  // namespace sandwich::kernels
