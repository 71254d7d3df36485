// The GEMM driver: runs a schedule (micro-kernel, slice, thread grid) over packed weights.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <immintrin.h>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

// Per-thread scratch that survives between calls (team threads live as long as the team).
struct Scratch {
  std::vector<float> g, u;  // C tiles of partial panels and of the gate/up pair
};
thread_local Scratch tls;

// Team-wide buffers, owned by the calling thread and shared with its team through the job:
// the BF16 (or even-padded) activations and split-k partial sums.
struct Shared {
  std::vector<uint16_t> a_bf16;
  std::vector<float> a_f32;
  std::vector<float> partial;
};
thread_local Shared shared_buffers;

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
void to_bf16_avx512(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i, (__m512i)v);
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}
#pragma GCC pop_options

inline float silu(float v) { return v / (1.0f + std::exp(-v)); }

struct Job {
  const PackedWeight* w;
  const PackedWeight* up;  // gate/up pair when set
  GemmArgs a;
  int64_t n1, k1, kk, kkp;  // resolved column end, K end, K width, even-padded K width
  int64_t p0, p1;           // panel range
  Schedule s;
  const MicroKernel* tiles[65] = {};  // by height, same width
  bool bf16_a;
  const void* A;  // activations as the kernels read them
  int64_t lda;
};

const uint8_t* panel_at(const PackedWeight& w, int64_t p, int64_t k, int c0) {
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
  if (w.dtype == DType::BF16) return base + static_cast<size_t>(k / 2) * 2 * kPanel * 2 + static_cast<size_t>(c0) * 4;
  return base + static_cast<size_t>(k) * kPanel * 4 + static_cast<size_t>(c0) * 4;
}

const void* a_at(const Job& j, int64_t m, int64_t k) {
  if (j.bf16_a) return static_cast<const uint16_t*>(j.A) + m * j.lda + k;
  return static_cast<const float*>(j.A) + m * j.lda + k;
}

// C[rows m0..m0+mb) x panel p] over K [kb0, kb1) of weight w into c (row stride ldc).
void run_panel(const Job& j, const PackedWeight& w, int64_t p, int64_t m0, int64_t mb, int64_t kb0, int64_t kb1,
               float* c, int64_t ldc, bool accumulate_first) {
  const Schedule& s = j.s;
  for (int64_t kb = kb0; kb < kb1; kb += s.bk) {
    const int64_t kc = std::min<int64_t>(s.bk, kb1 - kb);
    const bool acc = kb != kb0 || accumulate_first;
    for (int c0 = 0; c0 < kPanel; c0 += s.un) {
      const void* b = panel_at(w, p, j.a.k0 + kb, c0);
      for (int64_t mm = 0; mm < mb; mm += s.um) {
        const int h = static_cast<int>(std::min<int64_t>(s.um, mb - mm));
        j.tiles[h]->fn(a_at(j, m0 + mm, kb), j.lda, b, kc, c + mm * ldc + c0, ldc, acc);
      }
    }
  }
}

void thread_body(const Job& j, int tid) {
  const Schedule& s = j.s;
  const int im = tid / (s.tn * s.tk), in = (tid / s.tk) % s.tn, ik = tid % s.tk;
  const int64_t M = j.a.m;
  // Rows: split in whole tiles; panels: evenly; K: even-aligned chunks.
  const int64_t m_tiles = (M + s.um - 1) / s.um;
  const int64_t mlo = std::min(M, m_tiles * im / s.tm * s.um), mhi = std::min(M, m_tiles * (im + 1) / s.tm * s.um);
  const int64_t np = j.p1 - j.p0;
  const int64_t plo = j.p0 + np * in / s.tn, phi = j.p0 + np * (in + 1) / s.tn;
  // BF16 K shares hold whole pairs.
  const int64_t g = j.w->dtype == DType::BF16 ? 2 : 1, units = j.kkp / g;
  const int64_t klo = units * ik / s.tk * g, khi = units * (ik + 1) / s.tk * g;
  if (mlo >= mhi || plo >= phi || klo >= khi) return;
  const int64_t ncols = j.n1 - j.a.n0;
  const int64_t bn_panels = std::max<int64_t>(1, s.bn / kPanel);

  for (int64_t m0 = mlo; m0 < mhi; m0 += s.bm) {
    const int64_t mb = std::min<int64_t>(s.bm, mhi - m0);
    for (int64_t pp = plo; pp < phi; pp += bn_panels) {
      const int64_t pn = std::min(bn_panels, phi - pp);
      const int64_t width = pn * kPanel;
      if (j.up) {
        // Gate and up tiles of this slice, then y = silu(gate) * up on the valid columns.
        tls.g.resize(static_cast<size_t>(mb * width));
        tls.u.resize(static_cast<size_t>(mb * width));
        for (int64_t p = pp; p < pp + pn; ++p) {
          run_panel(j, *j.w, p, m0, mb, klo, khi, tls.g.data() + (p - pp) * kPanel, width, false);
          run_panel(j, *j.up, p, m0, mb, klo, khi, tls.u.data() + (p - pp) * kPanel, width, false);
        }
        const int64_t col0 = pp * kPanel - j.a.n0;
        const int64_t valid = std::min(width, ncols - col0);
        for (int64_t r = 0; r < mb; ++r) {
          float* y = j.a.y + (m0 + r) * j.a.ldy + col0;
          const float* g = tls.g.data() + r * width;
          const float* u = tls.u.data() + r * width;
          for (int64_t c = 0; c < valid; ++c) y[c] = silu(g[c]) * u[c];
        }
        continue;
      }
      for (int64_t p = pp; p < pp + pn; ++p) {
        const int64_t col0 = p * kPanel - j.a.n0;
        if (col0 + kPanel <= ncols) {
          run_panel(j, *j.w, p, m0, mb, klo, khi, j.a.y + m0 * j.a.ldy + col0, j.a.ldy,
                    j.a.epilogue == Epilogue::Accumulate);
          continue;
        }
        // The partial last panel: compute into a tile, then store or add the valid columns.
        tls.g.resize(static_cast<size_t>(mb * kPanel));
        run_panel(j, *j.w, p, m0, mb, klo, khi, tls.g.data(), kPanel, false);
        const int64_t valid = std::min<int64_t>(kPanel, ncols - col0);
        for (int64_t r = 0; r < mb; ++r) {
          float* y = j.a.y + (m0 + r) * j.a.ldy + col0;
          const float* g = tls.g.data() + r * kPanel;
          if (j.a.epilogue == Epilogue::Accumulate)
            for (int64_t c = 0; c < valid; ++c) y[c] += g[c];
          else
            for (int64_t c = 0; c < valid; ++c) y[c] = g[c];
        }
      }
    }
  }
}

void run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& args, ThreadTeam& team,
         const Schedule* schedule) {
  Job j;
  j.w = &w;
  j.up = up;
  j.a = args;
  j.n1 = args.n1 < 0 ? w.n : args.n1;
  j.k1 = args.k1 < 0 ? w.k : args.k1;
  if (!w.data) throw std::invalid_argument("gemm: the weight has no buffer");
  if (args.m < 0) throw std::invalid_argument("gemm: negative m");
  if (args.n0 < 0 || args.n0 >= j.n1 || j.n1 > w.n || args.n0 % w.panel != 0)
    throw std::invalid_argument("gemm: output columns [" + std::to_string(args.n0) + ", " + std::to_string(j.n1) +
                                ") must lie in the weight and start on a 64-column panel");
  if (args.k0 < 0 || args.k0 >= j.k1 || j.k1 > w.k || args.k0 % 2 != 0)
    throw std::invalid_argument("gemm: input columns [" + std::to_string(args.k0) + ", " + std::to_string(j.k1) +
                                ") must lie in the weight and start at an even column");
  if (args.m == 0) return;
  j.kk = j.k1 - args.k0;
  j.kkp = w.dtype == DType::BF16 ? (j.kk + 1) / 2 * 2 : j.kk;
  if (j.k1 != w.k && j.kkp != j.kk) throw std::invalid_argument("gemm: a K range inside the weight must have even width");
  j.p0 = args.n0 / w.panel;
  j.p1 = (j.n1 + w.panel - 1) / w.panel;
  const GemmShape shape{args.m, j.n1 - args.n0, j.kk, w.dtype, team.size()};
  j.s = schedule ? *schedule : default_schedule(shape);
  if (schedule) validate_schedule(shape, j.s);
  if (up && j.s.tk > 1) {  // the fused epilogue needs whole sums: no split-k
    j.s.tn *= j.s.tk;
    j.s.tk = 1;
  }
  for (int h = 1; h <= j.s.um; ++h) {
    j.tiles[h] = find_microkernel(j.s.isa, w.dtype, h, j.s.un);
    if (!j.tiles[h]) throw std::logic_error("gemm: missing micro-kernel " + std::to_string(h) + "x" + std::to_string(j.s.un));
  }
  // Activations in the form the kernels read: BF16 for vdpbf16ps, otherwise F32 (copied only
  // when an odd K needs the zero pad).
  j.bf16_a = j.s.isa == Isa::Avx512Bf16;
  Shared& sh = shared_buffers;
  if (j.bf16_a) {
    sh.a_bf16.assign(static_cast<size_t>(args.m * j.kkp), 0);
    j.A = sh.a_bf16.data();
    j.lda = j.kkp;
  } else if (j.kkp != j.kk) {
    sh.a_f32.assign(static_cast<size_t>(args.m * j.kkp), 0.0f);
    for (int64_t r = 0; r < args.m; ++r) std::memcpy(sh.a_f32.data() + r * j.kkp, args.x + r * args.ldx, j.kk * 4);
    j.A = sh.a_f32.data();
    j.lda = j.kkp;
  } else {
    j.A = args.x;
    j.lda = args.ldx;
  }
  const bool split_k = j.s.tk > 1;
  const int64_t ncols = j.n1 - args.n0;
  if (split_k) sh.partial.assign(static_cast<size_t>(j.s.tk) * args.m * ncols, 0.0f);
  team.run([&](int tid, int nt) {
    if (j.bf16_a) {
      const int64_t r0 = args.m * tid / nt, r1 = args.m * (tid + 1) / nt;
      for (int64_t r = r0; r < r1; ++r)
        to_bf16_avx512(args.x + r * args.ldx, sh.a_bf16.data() + r * j.kkp, j.kk);
      team.barrier();
    }
    if (!split_k) {
      thread_body(j, tid);
      return;
    }
    // Split-k: each K share writes its own partial C; then rows are reduced by all threads.
    Job part = j;
    const int ik = tid % j.s.tk;
    part.a.y = sh.partial.data() + static_cast<size_t>(ik) * args.m * ncols;
    part.a.ldy = ncols;
    part.a.epilogue = Epilogue::Store;
    thread_body(part, tid);
    team.barrier();
    const int64_t r0 = args.m * tid / nt, r1 = args.m * (tid + 1) / nt;
    for (int64_t r = r0; r < r1; ++r) {
      float* y = args.y + r * args.ldy;
      for (int64_t c = 0; c < ncols; ++c) {
        float sum = args.epilogue == Epilogue::Accumulate ? y[c] : 0.0f;
        for (int t = 0; t < j.s.tk; ++t) sum += sh.partial[(static_cast<size_t>(t) * args.m + r) * ncols + c];
        y[c] = sum;
      }
    }
  });
}

}  // namespace

void gemm(const PackedWeight& w, const GemmArgs& a, ThreadTeam& team, const Schedule* schedule) {
  run(w, nullptr, a, team, schedule);
}

void gemm_silu_mul(const PackedWeight& gate, const PackedWeight& up, const GemmArgs& a, ThreadTeam& team,
                   const Schedule* schedule) {
  if (gate.n != up.n || gate.k != up.k || gate.dtype != up.dtype)
    throw std::invalid_argument("gemm_silu_mul: gate and up differ in shape or type");
  run(gate, &up, a, team, schedule);
}

}  // namespace sandwich::kernels
