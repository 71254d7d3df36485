// The AVX-512 body of attention: tiles of 4 query rows share every K/V block load; the scores of
// a block are 16-lane FMAs over the transposed K, the softmax runs online. AttentionParams sets
// how many rows share a pass over the KV blocks and how many blocks make one inner step; neither
// changes a row's arithmetic or the order it visits the blocks in. A BF16 cache's elements are
// widened to f32 as they load (exact: a 16-bit shift), the rest being the F32 kernel.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "vec_math_avx512.h"
// After the target pragma: the pass driver compiles for this body's ISA.
#include "attention_passes.h"

namespace sandwich::kernels {

namespace {

constexpr int kRows = 4;  // query rows of the register tile

// 16 K or V elements as f32: T is float or bf16_t.
inline __m512 widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
__attribute__((always_inline)) inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
__attribute__((always_inline)) inline __m512 load16(const bf16_t* p) {
  return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
__attribute__((always_inline)) inline __m512 maskz_load16(__mmask16 m, const float* p) {
  return _mm512_maskz_loadu_ps(m, p);
}
__attribute__((always_inline)) inline __m512 maskz_load16(__mmask16 m, const bf16_t* p) {
  return widen(_mm256_maskz_loadu_epi16(m, p));
}

// Blocks whose scores one call computes: 2 * NR * NB accumulators stay within the register file.
constexpr int max_qk_blocks(int nr) {
  return nr == 1 ? 8 : nr == 2 ? 4 : 2;
}

// sc[b][i] = the unscaled scores of row i against block b, for NR rows and NB blocks. Even and
// odd key dimensions sum in separate chains, then add: a row's sums are the same for any NB.
template <int NR, int NB, class T>
__attribute__((always_inline)) inline void qk_blocks(const float* const* qr, const T* const* kb,
                                                     int32_t hd, float (*sc)[kRows][kKVBlock]) {
  __m512 s[NB][NR][2];
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i) s[b][i][0] = s[b][i][1] = _mm512_setzero_ps();
  for (int32_t d = 0; d + 2 <= hd; d += 2) {
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      __m512 k0 = load16(kb[b] + int64_t{d} * kKVBlock);
      __m512 k1 = load16(kb[b] + int64_t{d + 1} * kKVBlock);
      // K in registers, q broadcast from memory: with several blocks GCC otherwise folds each
      // K load into every row's FMA (NR times the loads).
      asm("" : "+v"(k0), "+v"(k1));
#pragma GCC unroll 4
      for (int i = 0; i < NR; ++i) {
        s[b][i][0] = _mm512_fmadd_ps(_mm512_set1_ps(qr[i][d]), k0, s[b][i][0]);
        s[b][i][1] = _mm512_fmadd_ps(_mm512_set1_ps(qr[i][d + 1]), k1, s[b][i][1]);
      }
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i) _mm512_store_ps(sc[b][i], _mm512_add_ps(s[b][i][0], s[b][i][1]));
}

// acc[i] = (acc[i] * corr[b][i] + p[b][i] x V_b) over the nb blocks of a step, for the NR rows of
// a tile. The accumulators stay in registers across the blocks; each block's multiply and FMAs
// are those of a step of one block. Every row shares each V row load, 4 vectors (64 dims) at a
// time, so up to 16 independent accumulators hide the FMA latency. Slots past a row's visible
// positions have p = 0.
template <int NR, class T>
__attribute__((always_inline)) inline void pv_blocks(const float (*p)[kRows][kKVBlock],
                                                     const float (*corr)[kRows], const T* const* vb,
                                                     const int32_t* vis, int32_t nb, int32_t hd,
                                                     float* const* acc) {
  for (int32_t d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 dm[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) dm[v] = simd::tail_mask(std::clamp(hd - d0 - 16 * v, 0, 16));
    __m512 a[NR][4];
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) a[i][v] = _mm512_maskz_load_ps(dm[v], acc[i] + d0 + 16 * v);
    for (int32_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
      for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) a[i][v] = _mm512_mul_ps(a[i][v], _mm512_set1_ps(corr[b][i]));
      const T* vbase = vb[b] + d0;
      for (int32_t j = 0; j < vis[b]; ++j) {
        const T* vr = vbase + int64_t{j} * hd;
        __m512 vv[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) vv[v] = maskz_load16(dm[v], vr + 16 * v);
#pragma GCC unroll 4
        for (int i = 0; i < NR; ++i) {
          const __m512 pb = _mm512_set1_ps(p[b][i][j]);
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) a[i][v] = _mm512_fmadd_ps(pb, vv[v], a[i][v]);
        }
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) _mm512_mask_store_ps(acc[i] + d0 + 16 * v, dm[v], a[i][v]);
  }
}

// One tile of NR rows over blocks [b0, b0 + nb): scores, the online softmax block by block, then
// the weighted values.
template <int NR, class T>
void tile_step(PassRows& r, int32_t i0, const PagedKV& kv, const int32_t* block_table,
               int32_t kv_head, int32_t b0, int32_t nb, float scale) {
  const int32_t hd = kv.head_dim;
  const StepBlocks<T> blocks(kv, block_table, kv_head, b0, nb);
  // The scores, then in place the probabilities.
  alignas(64) float sc[kMaxStepBlocks][kRows][kKVBlock];
  int32_t b = 0;
  in_calls_of<8, max_qk_blocks(NR)>(b, nb, [&](auto n, int32_t first) {
    qk_blocks<NR, decltype(n)::value, T>(r.q + i0, blocks.k + first, hd, sc + first);
  });
  float corr[kMaxStepBlocks][kRows];
  int32_t vis[kMaxStepBlocks];
  for (b = 0; b < nb; ++b) {
    const int32_t first = (b0 + b) * kKVBlock;
    int32_t vis_max = 0;
    for (int i = 0; i < NR; ++i) {
      float& m = r.m[i0 + i];
      float& l = r.l[i0 + i];
      const int32_t visible = visible_or_skip(r.limit[i0 + i], first, sc[b][i], corr[b][i]);
      if (visible == 0) continue;
      vis_max = std::max(vis_max, std::min<int32_t>(kKVBlock, visible));
      __m512 sv = _mm512_mul_ps(_mm512_load_ps(sc[b][i]), _mm512_set1_ps(scale));
      const __mmask16 vm = simd::tail_mask(visible);
      sv = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), vm, sv);
      const float m_new = std::max(m, _mm512_reduce_max_ps(sv));
      const __m512 e =
          _mm512_maskz_mov_ps(vm, simd::exp512(_mm512_sub_ps(sv, _mm512_set1_ps(m_new))));
      corr[b][i] = std::exp(m - m_new);
      l = l * corr[b][i] + _mm512_reduce_add_ps(e);
      m = m_new;
      _mm512_store_ps(sc[b][i], e);
    }
    vis[b] = vis_max;
  }
  pv_blocks<NR, T>(sc, corr, blocks.v, vis, nb, hd, r.acc + i0);
}

// acc[i] = acc[i] * corr[i] + p[i] x V for the NR rows of a chunk over one KV block. Every row
// shares each V row load, 4 vectors (64 dims) at a time, so up to 16 independent accumulators
// hide the FMA latency (one chain per row and 16 dims left this half of attention latency-bound).
// Rows past a row's visible positions have p = 0.
template <int NR, class T>
__attribute__((always_inline)) inline void pv_block(const float (*p)[kKVBlock], const float* corr,
                                                    const T* vb, int32_t hd, int32_t vis,
                                                    float (*acc)[1024]) {
  for (int32_t d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 dm[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) dm[v] = simd::tail_mask(std::clamp(hd - d0 - 16 * v, 0, 16));
    __m512 a[NR][4];
#pragma GCC unroll 16
    for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v)
        a[i][v] = _mm512_mul_ps(_mm512_maskz_load_ps(dm[v], acc[i] + d0 + 16 * v),
                                _mm512_set1_ps(corr[i]));
    for (int32_t j = 0; j < vis; ++j) {
      const T* vr = vb + int64_t{j} * hd + d0;
      __m512 vv[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) vv[v] = maskz_load16(dm[v], vr + 16 * v);
#pragma GCC unroll 16
      for (int i = 0; i < NR; ++i) {
        const __m512 pb = _mm512_set1_ps(p[i][j]);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) a[i][v] = _mm512_fmadd_ps(pb, vv[v], a[i][v]);
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) _mm512_mask_store_ps(acc[i] + d0 + 16 * v, dm[v], a[i][v]);
  }
}

// The kernel before AttentionParams, kept for the default block sizes on full tiles, where it
// is a few percent faster than the general loop (prefill); the bits are the same. Rows r of a
// chunk: token t = r / group, head g = r % group.
template <class T>
__attribute__((noinline)) void tiles_of_4(const PagedKV& kv, const int32_t* block_table,
                                          int32_t kv_head, const float* q, int64_t ldq,
                                          int32_t n_tok, int32_t group, int32_t start_pos,
                                          float scale, float* out, int64_t ldo) {
  const int32_t hd = kv.head_dim;
  const int32_t n_rows = n_tok * group;
  // Per-row running output, max and sum; hd <= 1024 is checked by the model config.
  alignas(64) float acc[kRows][1024];
  for (int32_t r0 = 0; r0 < n_rows; r0 += kRows) {
    const int nr = std::min<int32_t>(kRows, n_rows - r0);
    const float* qr[kRows];
    float* orow[kRows];
    int32_t limit[kRows];  // visible positions
    float m[kRows], l[kRows];
    int32_t max_limit = 0;
    for (int i = 0; i < kRows; ++i) {
      const int32_t r = r0 + std::min(i, nr - 1);
      const int32_t t = r / group, g = r % group;
      qr[i] = q + t * ldq + int64_t{g} * hd;
      orow[i] = out + t * ldo + int64_t{g} * hd;
      limit[i] = start_pos + t + 1;
      max_limit = std::max(max_limit, limit[i]);
      m[i] = -INFINITY;
      l[i] = 0.0f;
      std::fill(acc[i], acc[i] + hd, 0.0f);
    }
    const int32_t n_blocks = (max_limit + kKVBlock - 1) / kKVBlock;
    for (int32_t b = 0; b < n_blocks; ++b) {
      const int32_t blk = block_table[b];
      const T* kb = kv.key<T>(blk, kv_head);
      const T* vb = kv.value<T>(blk, kv_head);
      // Q x K^T for the block. The sums go to memory only after the loop: indexed by a runtime
      // row count later, GCC kept them on the stack through the whole loop (stores every step).
      alignas(64) float sc[kRows][kKVBlock];
      {
        __m512 s[kRows][2];
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) s[i][0] = s[i][1] = _mm512_setzero_ps();
        for (int32_t d = 0; d + 2 <= hd; d += 2) {
          const __m512 k0 = load16(kb + int64_t{d} * kKVBlock);
          const __m512 k1 = load16(kb + int64_t{d + 1} * kKVBlock);
#pragma GCC unroll 8
          for (int i = 0; i < kRows; ++i) {
            s[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(qr[i][d]), k0, s[i][0]);
            s[i][1] = _mm512_fmadd_ps(_mm512_set1_ps(qr[i][d + 1]), k1, s[i][1]);
          }
        }
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) _mm512_store_ps(sc[i], _mm512_add_ps(s[i][0], s[i][1]));
      }
      alignas(64) float p[kRows][kKVBlock];
      float corr[kRows];
      for (int i = 0; i < nr; ++i) {
        __m512 sv = _mm512_mul_ps(_mm512_load_ps(sc[i]), _mm512_set1_ps(scale));
        const int32_t visible = limit[i] - b * kKVBlock;
        if (visible <= 0) {
          std::fill(p[i], p[i] + kKVBlock, 0.0f);
          corr[i] = 1.0f;
          continue;
        }
        const __mmask16 vis = simd::tail_mask(visible);
        sv = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), vis, sv);
        const float m_new = std::max(m[i], _mm512_reduce_max_ps(sv));
        const __m512 e =
            _mm512_maskz_mov_ps(vis, simd::exp512(_mm512_sub_ps(sv, _mm512_set1_ps(m_new))));
        corr[i] = std::exp(m[i] - m_new);
        l[i] = l[i] * corr[i] + _mm512_reduce_add_ps(e);
        m[i] = m_new;
        _mm512_store_ps(p[i], e);
      }
      int32_t vis_max = 0;
      for (int i = 0; i < nr; ++i)
        vis_max = std::max(vis_max, std::min<int32_t>(kKVBlock, limit[i] - b * kKVBlock));
      switch (nr) {
        case 1:
          pv_block<1, T>(p, corr, vb, hd, vis_max, acc);
          break;
        case 2:
          pv_block<2, T>(p, corr, vb, hd, vis_max, acc);
          break;
        case 3:
          pv_block<3, T>(p, corr, vb, hd, vis_max, acc);
          break;
        default:
          pv_block<kRows, T>(p, corr, vb, hd, vis_max, acc);
          break;
      }
    }
    for (int i = 0; i < nr; ++i) {
      const float inv = 1.0f / l[i];
      for (int32_t d = 0; d < hd; ++d) orow[i][d] = acc[i][d] * inv;
    }
  }
}

// The hooks attention_passes() takes from this body.
struct Avx512Body {
  template <int NR, class T>
  static void tile(PassRows& r, int32_t i0, const PagedKV& kv, const int32_t* block_table,
                   int32_t kv_head, int32_t b0, int32_t nb, float scale) {
    tile_step<NR, T>(r, i0, kv, block_table, kv_head, b0, nb, scale);
  }
  // The default pass and step (4 rows, one block) over whole tiles: tiles_of_4.
  template <class T>
  static bool whole_tiles(int32_t pass, int32_t step, const PagedKV& kv, const int32_t* block_table,
                          int32_t kv_head, const float* q, int64_t ldq, int32_t n_tok,
                          int32_t group, int32_t start_pos, float scale, float* out, int64_t ldo) {
    if (pass != kRows || step != 1 || n_tok * group < kRows) return false;
    tiles_of_4<T>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos, scale, out, ldo);
    return true;
  }
  static constexpr int32_t kStride = 16;
};

}  // namespace

#pragma GCC pop_options

const AttentionKernels kAttentionAvx512 = {Isa::Avx512, vector_attention_fits,
                                           run_by_cache_type<kRows, Avx512Body>};

}  // namespace sandwich::kernels
