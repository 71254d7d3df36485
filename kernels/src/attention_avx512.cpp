// The AVX-512 body of attention: chunks of 4 query rows share every K/V block load; the scores
// of a block are 16-lane FMAs over the transposed K, the softmax runs online.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "vec_math_avx512.h"

namespace sandwich::kernels {

namespace {

constexpr int kRows = 4;  // query rows sharing each K/V block load

// acc[i] = acc[i] * corr[i] + p[i] x V for the NR rows of a chunk over one KV block. Every row
// shares each V row load, 4 vectors (64 dims) at a time, so up to 16 independent accumulators
// hide the FMA latency (one chain per row and 16 dims left this half of attention latency-bound).
// Rows past a row's visible positions have p = 0.
template <int NR>
__attribute__((always_inline)) inline void pv_block(const float (*p)[kKVBlock], const float* corr,
                                                    const float* vb, int32_t hd, int32_t vis,
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
      const float* vr = vb + int64_t{j} * hd + d0;
      __m512 vv[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) vv[v] = _mm512_maskz_loadu_ps(dm[v], vr + 16 * v);
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

}  // namespace

// Rows r of a chunk: token t = r / group, head g = r % group.
void attention_avx512(const PagedKV& kv, const int32_t* block_table, int32_t kv_head,
                      const float* q, int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos,
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
      const float* kb = kv.key(blk, kv_head);
      const float* vb = kv.value(blk, kv_head);
      // Q x K^T for the block. The sums go to memory only after the loop: indexed by a runtime
      // row count later, GCC kept them on the stack through the whole loop (stores every step).
      alignas(64) float sc[kRows][kKVBlock];
      {
        __m512 s[kRows][2];
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) s[i][0] = s[i][1] = _mm512_setzero_ps();
        for (int32_t d = 0; d + 2 <= hd; d += 2) {
          const __m512 k0 = _mm512_loadu_ps(kb + int64_t{d} * kKVBlock);
          const __m512 k1 = _mm512_loadu_ps(kb + int64_t{d + 1} * kKVBlock);
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
          pv_block<1>(p, corr, vb, hd, vis_max, acc);
          break;
        case 2:
          pv_block<2>(p, corr, vb, hd, vis_max, acc);
          break;
        case 3:
          pv_block<3>(p, corr, vb, hd, vis_max, acc);
          break;
        default:
          pv_block<kRows>(p, corr, vb, hd, vis_max, acc);
          break;
      }
    }
    for (int i = 0; i < nr; ++i) {
      const float inv = 1.0f / l[i];
      for (int32_t d = 0; d < hd; ++d) orow[i][d] = acc[i][d] * inv;
    }
  }
}

}  // namespace sandwich::kernels

#pragma GCC pop_options
