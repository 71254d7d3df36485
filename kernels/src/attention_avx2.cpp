// The AVX2 body of attention: attention_avx512.cpp's passes, steps and tiles of 4 query rows on
// 8-lane vectors, so a KV block's 16 slots are two vectors. With 16 registers, a row's scores
// are one FMA chain per half block (not per even and odd dim), and the weighted values take 16
// or 32 dims at a time; neither choice depends on AttentionParams, so the block sizes still
// change the speed only. A BF16 cache's elements are widened to f32 as they load (exact).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "vec_math_avx2.h"
// After the target pragma: the pass driver compiles for this body's ISA.
#include "attention_passes.h"

namespace sandwich::kernels {

namespace {

constexpr int kRows = 4;  // query rows of the register tile

using simd::tail_mask8;

// The lanes of a tail of n dims (n even, as head sizes are): as f32 lanes and as BF16 pairs.
struct Lanes {
  __m256i f32;
  __m128i pairs;
};
inline Lanes lanes(int32_t n) {
  const int32_t p = std::clamp(n, 0, 8) / 2;
  return {tail_mask8(std::max(n, 0)),
          _mm_cmpgt_epi32(_mm_set1_epi32(p), _mm_setr_epi32(0, 1, 2, 3))};
}

inline __m256 widen(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
__attribute__((always_inline)) inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
__attribute__((always_inline)) inline __m256 load8(const bf16_t* p) {
  return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// maskload has no 16-bit form: BF16 loads pairs, which even head sizes never split.
__attribute__((always_inline)) inline __m256 maskz_load8(const float* p, const Lanes& m) {
  return _mm256_maskload_ps(p, m.f32);
}
__attribute__((always_inline)) inline __m256 maskz_load8(const bf16_t* p, const Lanes& m) {
  return widen(_mm_maskload_epi32(reinterpret_cast<const int*>(p), m.pairs));
}

// Blocks whose scores one call computes: 2 * NR * NB accumulators leave registers for K.
constexpr int max_blocks_per_call(int nr) {
  return nr == 1 ? 4 : nr == 2 ? 2 : 1;
}

// sc[b][i] = the unscaled scores of row i against block b, for NR rows and NB blocks; each half
// block of a row sums its dims in order in one chain, the same for any NB.
template <int NR, int NB, class T>
__attribute__((always_inline)) inline void qk_halves(const float* const* qr, const T* const* kb,
                                                     int32_t hd, float (*sc)[kRows][kKVBlock]) {
  __m256 s[NB][NR][2];
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i) s[b][i][0] = s[b][i][1] = _mm256_setzero_ps();
  for (int32_t d = 0; d < hd; ++d) {
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) {
      __m256 k0 = load8(kb[b] + int64_t{d} * kKVBlock);
      __m256 k1 = load8(kb[b] + int64_t{d} * kKVBlock + 8);
      // K in registers, q broadcast from memory (as in the AVX-512 body).
      asm("" : "+x"(k0), "+x"(k1));
#pragma GCC unroll 4
      for (int i = 0; i < NR; ++i) {
        const __m256 qd = _mm256_broadcast_ss(qr[i] + d);
        s[b][i][0] = _mm256_fmadd_ps(qd, k0, s[b][i][0]);
        s[b][i][1] = _mm256_fmadd_ps(qd, k1, s[b][i][1]);
      }
    }
  }
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i) {
      _mm256_store_ps(sc[b][i], s[b][i][0]);
      _mm256_store_ps(sc[b][i] + 8, s[b][i][1]);
    }
}

// Vectors of dims one weighted-values chunk takes per row: NR * V accumulators, V values and a
// broadcast fit the 16 registers, and one- and two-row tiles still get 4 independent chains.
constexpr int pv_vectors(int nr) {
  return nr <= 2 ? 4 : 2;
}

// acc[i][d0, d0 + 8V) = (acc * corr[b][i] + p[b][i] x V_b) over the nb blocks of a step, for the
// NR rows of a tile; every row shares each V row load. Tail: the chunk passes hd, so V loads are
// masked (acc rows are zeroed up to their stride, a multiple of 32). Slots past a row's visible
// positions have p = 0.
template <int NR, bool Tail, class T>
__attribute__((always_inline)) inline void pv_chunk(const float (*p)[kRows][kKVBlock],
                                                    const float (*corr)[kRows], const T* const* vb,
                                                    const int32_t* vis, int32_t nb, int32_t hd,
                                                    int32_t d0, float* const* acc) {
  constexpr int V = pv_vectors(NR);
  [[maybe_unused]] Lanes dm[V];
  if constexpr (Tail)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) dm[v] = lanes(hd - d0 - 8 * v);
  __m256 a[NR][V];
#pragma GCC unroll 4
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) a[i][v] = _mm256_load_ps(acc[i] + d0 + 8 * v);
  for (int32_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[i][v] = _mm256_mul_ps(a[i][v], _mm256_set1_ps(corr[b][i]));
    const T* vbase = vb[b] + d0;
    for (int32_t j = 0; j < vis[b]; ++j) {
      const T* vr = vbase + int64_t{j} * hd;
      __m256 vv[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        if constexpr (Tail)
          vv[v] = maskz_load8(vr + 8 * v, dm[v]);
        else
          vv[v] = load8(vr + 8 * v);
      }
#pragma GCC unroll 4
      for (int i = 0; i < NR; ++i) {
        const __m256 pb = _mm256_broadcast_ss(&p[b][i][j]);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) a[i][v] = _mm256_fmadd_ps(pb, vv[v], a[i][v]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm256_store_ps(acc[i] + d0 + 8 * v, a[i][v]);
}

template <int NR, class T>
__attribute__((always_inline)) inline void pv_blocks(const float (*p)[kRows][kKVBlock],
                                                     const float (*corr)[kRows], const T* const* vb,
                                                     const int32_t* vis, int32_t nb, int32_t hd,
                                                     float* const* acc) {
  constexpr int32_t W = 8 * pv_vectors(NR);
  int32_t d0 = 0;
  for (; d0 + W <= hd; d0 += W) pv_chunk<NR, false, T>(p, corr, vb, vis, nb, hd, d0, acc);
  if (d0 < hd) pv_chunk<NR, true, T>(p, corr, vb, vis, nb, hd, d0, acc);
}

// Row i's scores of one block (16 slots, `visible` of them seen) into probabilities in place,
// updating its running max m and sum l; returns the factor its accumulators are rescaled by.
inline float softmax_block(float* sc, int32_t visible, float scale, float& m, float& l) {
  const __m256 sv = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
  const __m256 m0 = _mm256_castsi256_ps(tail_mask8(visible));
  const __m256 m1 = _mm256_castsi256_ps(tail_mask8(std::max(visible - 8, 0)));
  const __m256 s0 = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_load_ps(sc), sv), m0);
  const __m256 s1 = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_load_ps(sc + 8), sv), m1);
  const float m_new = std::max(m, simd::reduce_max8(_mm256_max_ps(s0, s1)));
  const __m256 mn = _mm256_set1_ps(m_new);
  const __m256 e0 = _mm256_and_ps(m0, simd::exp256(_mm256_sub_ps(s0, mn)));
  const __m256 e1 = _mm256_and_ps(m1, simd::exp256(_mm256_sub_ps(s1, mn)));
  const float corr = std::exp(m - m_new);
  l = l * corr + simd::reduce_add8(_mm256_add_ps(e0, e1));
  m = m_new;
  _mm256_store_ps(sc, e0);
  _mm256_store_ps(sc + 8, e1);
  return corr;
}

// One tile of NR rows over blocks [b0, b0 + nb) in 8-lane halves of a block: scores, the online
// softmax (softmax_block), then the weighted values.
template <int NR, class T>
void tile_step(PassRows& r, int32_t i0, const PagedKV& kv, const int32_t* block_table,
               int32_t kv_head, int32_t b0, int32_t nb, float scale) {
  const int32_t hd = kv.head_dim;
  const StepBlocks<T> blocks(kv, block_table, kv_head, b0, nb);
  float corr[kMaxStepBlocks][kRows];  // each row's rescale of its accumulators, per block
  int32_t vis[kMaxStepBlocks];        // positions of a block some row sees
  // Scores, made probabilities in place by softmax_block.
  alignas(32) float sc[kMaxStepBlocks][kRows][kKVBlock];
  int32_t b = 0;
  in_calls_of<4, max_blocks_per_call(NR)>(b, nb, [&](auto n, int32_t first) {
    qk_halves<NR, decltype(n)::value, T>(r.q + i0, blocks.k + first, hd, sc + first);
  });
  for (b = 0; b < nb; ++b) {
    const int32_t first = (b0 + b) * kKVBlock;
    int32_t vis_max = 0;
    for (int i = 0; i < NR; ++i) {
      const int32_t visible = visible_or_skip(r.limit[i0 + i], first, sc[b][i], corr[b][i]);
      if (visible == 0) continue;
      vis_max = std::max(vis_max, std::min<int32_t>(kKVBlock, visible));
      corr[b][i] = softmax_block(sc[b][i], visible, scale, r.m[i0 + i], r.l[i0 + i]);
    }
    vis[b] = vis_max;
  }
  pv_blocks<NR, T>(sc, corr, blocks.v, vis, nb, hd, r.acc + i0);
}

// The hooks attention_passes() takes from this body.
struct Avx2Body {
  template <int NR, class T>
  static void tile(PassRows& r, int32_t i0, const PagedKV& kv, const int32_t* block_table,
                   int32_t kv_head, int32_t b0, int32_t nb, float scale) {
    tile_step<NR, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
  }
  template <class T>
  static bool whole_tiles(int32_t, int32_t, const PagedKV&, const int32_t*, int32_t, const float*,
                          int64_t, int32_t, int32_t, int32_t, float, float*, int64_t) {
    return false;  // no path of its own: every call runs the passes
  }
  static constexpr int32_t kStride = 32;  // whole chunks of pv_chunk
};

}  // namespace

#pragma GCC pop_options

const AttentionKernels kAttentionAvx2 = {Isa::Avx2, vector_attention_fits,
                                         run_by_cache_type<kRows, Avx2Body>};

}  // namespace sandwich::kernels
