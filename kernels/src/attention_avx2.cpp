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
#include "scratch_buffer.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "vec_math_avx2.h"

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
constexpr int max_qk_blocks(int nr) {
  return nr == 1 ? 4 : nr == 2 ? 2 : 1;
}

// sc[b][i] = the unscaled scores of row i against block b, for NR rows and NB blocks; each half
// block of a row sums its dims in order in one chain, the same for any NB.
template <int NR, int NB, class T>
__attribute__((always_inline)) inline void qk_blocks(const float* const* qr, const T* const* kb,
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

// The scores of blocks [b, nb) in calls of NB blocks, then of fewer.
template <int NR, int NB, class T>
__attribute__((always_inline)) inline void qk_step(const float* const* qr, const T* const* kb,
                                                   int32_t hd, float (*sc)[kRows][kKVBlock],
                                                   int32_t& b, int32_t nb) {
  if constexpr (NB <= max_qk_blocks(NR))
    for (; b + NB <= nb; b += NB) qk_blocks<NR, NB, T>(qr, kb + b, hd, sc + b);
  if constexpr (NB > 1) qk_step<NR, NB / 2, T>(qr, kb, hd, sc, b, nb);
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

// Per-row state of a pass: query and output rows, visible positions, running max and sum.
struct PassRows {
  const float* q[kMaxPassRows];
  float* out[kMaxPassRows];
  float* acc[kMaxPassRows];
  int32_t limit[kMaxPassRows];
  float m[kMaxPassRows], l[kMaxPassRows];
};

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

// One tile of NR rows over blocks [b0, b0 + nb): scores, the online softmax block by block, then
// the weighted values.
template <int NR, class T>
void tile_step(PassRows& r, int32_t i0, const PagedKV& kv, const int32_t* block_table,
               int32_t kv_head, int32_t b0, int32_t nb, float scale) {
  const int32_t hd = kv.head_dim;
  const T* kb[kMaxStepBlocks];
  const T* vb[kMaxStepBlocks];
  for (int32_t b = 0; b < nb; ++b) {
    const int32_t blk = block_table[b0 + b];
    kb[b] = kv.key<T>(blk, kv_head);
    vb[b] = kv.value<T>(blk, kv_head);
  }
  // The scores, then in place the probabilities.
  alignas(32) float sc[kMaxStepBlocks][kRows][kKVBlock];
  int32_t b = 0;
  qk_step<NR, 4, T>(r.q + i0, kb, hd, sc, b, nb);
  float corr[kMaxStepBlocks][kRows];
  int32_t vis[kMaxStepBlocks];
  for (b = 0; b < nb; ++b) {
    const int32_t first = (b0 + b) * kKVBlock;
    int32_t vis_max = 0;
    for (int i = 0; i < NR; ++i) {
      const int32_t visible = r.limit[i0 + i] - first;
      if (visible <= 0) {
        std::fill(sc[b][i], sc[b][i] + kKVBlock, 0.0f);
        corr[b][i] = 1.0f;
        continue;
      }
      vis_max = std::max(vis_max, std::min<int32_t>(kKVBlock, visible));
      corr[b][i] = softmax_block(sc[b][i], visible, scale, r.m[i0 + i], r.l[i0 + i]);
    }
    vis[b] = vis_max;
  }
  pv_blocks<NR, T>(sc, corr, vb, vis, nb, hd, r.acc + i0);
}

// Rows r of a call: token t = r / group, head g = r % group. A pass takes `pass_rows` rows and
// walks the KV blocks once, `kv_blocks` at a time, every tile of 4 rows taking each step.
template <class T>
void attention_of(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
                  int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale,
                  float* out, int64_t ldo, const AttentionParams& params) {
  const int32_t hd = kv.head_dim;
  const int32_t n_rows = n_tok * group;
  const int32_t pass = (std::clamp(params.pass_rows, 1, kMaxPassRows) + kRows - 1) / kRows * kRows;
  const int32_t step = std::clamp(params.kv_blocks, 1, kMaxStepBlocks);
  const int32_t stride = (hd + 31) / 32 * 32;  // whole chunks of pv_chunk; hd <= 1024
  alignas(32) float tile_acc[kRows * 1024];
  thread_local ScratchBuffer scratch;
  float* acc = pass * stride <= kRows * 1024
                   ? tile_acc
                   : static_cast<float*>(scratch.get(sizeof(float) * size_t(pass) * stride));
  PassRows r;
  for (int32_t r0 = 0; r0 < n_rows; r0 += pass) {
    const int32_t np = std::min(pass, n_rows - r0);
    int32_t max_limit = 0;
    for (int32_t i = 0; i < np; ++i) {
      const int32_t t = (r0 + i) / group, g = (r0 + i) % group;
      r.q[i] = q + t * ldq + int64_t{g} * hd;
      r.out[i] = out + t * ldo + int64_t{g} * hd;
      r.acc[i] = acc + int64_t{i} * stride;
      r.limit[i] = start_pos + t + 1;
      max_limit = std::max(max_limit, r.limit[i]);
      r.m[i] = -INFINITY;
      r.l[i] = 0.0f;
      std::fill(r.acc[i], r.acc[i] + stride, 0.0f);
    }
    const int32_t n_blocks = (max_limit + kKVBlock - 1) / kKVBlock;
    // Rows go by token, so a tile's last row sees the most positions.
    int32_t tile_blocks[kMaxPassRows / kRows];
    for (int32_t i0 = 0; i0 < np; i0 += kRows)
      tile_blocks[i0 / kRows] = (r.limit[std::min(i0 + kRows, np) - 1] + kKVBlock - 1) / kKVBlock;
    for (int32_t b0 = 0; b0 < n_blocks; b0 += step)
      for (int32_t i0 = 0; i0 < np; i0 += kRows) {
        const int nr = std::min<int32_t>(kRows, np - i0);
        const int32_t nb = std::min(step, tile_blocks[i0 / kRows] - b0);
        if (nb <= 0) continue;
        switch (nr) {
          case 1:
            tile_step<1, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
            break;
          case 2:
            tile_step<2, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
            break;
          case 3:
            tile_step<3, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
            break;
          default:
            tile_step<kRows, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
            break;
        }
      }
    for (int32_t i = 0; i < np; ++i) {
      const float inv = 1.0f / r.l[i];
      for (int32_t d = 0; d < hd; ++d) r.out[i][d] = r.acc[i][d] * inv;
    }
  }
}

void run(const PagedKV& kv, const int32_t* block_table, int32_t kv_head, const float* q,
         int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos, float scale, float* out,
         int64_t ldo, const AttentionParams& params) {
  if (kv.dtype == DType::BF16)
    return attention_of<bf16_t>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale,
                                out, ldo, params);
  attention_of<float>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out, ldo,
                      params);
}

}  // namespace

#pragma GCC pop_options

const AttentionKernels kAttentionAvx2 = {Isa::Avx2, vector_attention_fits, run};

}  // namespace sandwich::kernels
