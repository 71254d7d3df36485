// AVX2 kernels for quantized weights, the twins of quant_kernels_avx512.cpp on 8-row halves of
// a panel: vpmaddubsw (unsigned stored values x int8 activations, pairs summed to int16) and
// vpmaddwd by ones (to int32). 8-bit weights overflow int16 that way, so they go as signed
// values through the sign trick (|w| x sign(w) * a), which is the offset-corrected sum exactly.
#include <immintrin.h>

#include <utility>

#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

template <int N>
__attribute__((always_inline)) inline __m256i shift16(__m256i v) {
  if constexpr (N > 0) return _mm256_slli_epi16(v, N);
  if constexpr (N < 0) return _mm256_srli_epi16(v, -N);
  return v;
}

// Stored values of 4-k group G of scale unit `sub` of a chunk, rows 8h..8h+7.
template <QType T, int G>
__attribute__((always_inline)) inline __m256i group(const uint8_t* chunk, int sub, int h,
                                                    __m256i lo_pair, __m256i hv) {
  constexpr QLayout L = qlayout(T);
  __m256i v;
  if constexpr (L.low_bits == 8) {
    v = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(chunk + (sub * L.unit / 4 + G) * 64 + 32 * h));
  } else {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    v = G % 2 == 0 ? _mm256_and_si256(lo_pair, m4)
                   : _mm256_and_si256(_mm256_srli_epi16(lo_pair, 4), m4);
  }
  if constexpr (L.high_bits == 1)
    v = _mm256_or_si256(v, _mm256_and_si256(shift16<4 - G>(hv), _mm256_set1_epi8(0x10)));
  if constexpr (L.high_bits == 2)
    v = _mm256_or_si256(v, _mm256_and_si256(shift16<4 - 2 * G>(hv), _mm256_set1_epi8(0x30)));
  return v;
}

template <QType T, int R, int... G>
__attribute__((always_inline)) inline void unit_dots(const uint8_t* chunk, int sub, int h,
                                                     const int8_t* x, int64_t kk, __m256i (&dot)[R],
                                                     std::integer_sequence<int, G...>) {
  constexpr QLayout L = qlayout(T);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i hv = _mm256_setzero_si256();
  if constexpr (L.high_bits)
    hv = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(chunk + L.chunk_qs + sub * 64 + 32 * h));
  __m256i pair = _mm256_setzero_si256();
  auto one = [&](auto gc) {
    constexpr int g = decltype(gc)::value;
    if constexpr (L.low_bits == 4 && g % 2 == 0)
      pair = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(chunk + (sub * L.unit / 8 + g / 2) * 64 + 32 * h));
    __m256i v = group<T, g>(chunk, sub, h, pair, hv);
    if constexpr (L.low_bits == 8) v = _mm256_xor_si256(v, _mm256_set1_epi8(-128));  // signed
    for (int m = 0; m < R; ++m) {
      int32_t a4;
      __builtin_memcpy(&a4, x + m * kk + 4 * g, 4);
      const __m256i av = _mm256_set1_epi32(a4);
      __m256i p16;
      if constexpr (L.low_bits == 8)
        p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(av, v));
      else
        p16 = _mm256_maddubs_epi16(v, av);
      dot[m] = _mm256_add_epi32(dot[m], _mm256_madd_epi16(p16, ones));
    }
  };
  (one(std::integral_constant<int, G>{}), ...);
}

template <QType T, int R, bool Prefetch>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  constexpr bool kBlockScale = L.block_elems == kQKK;
  constexpr bool kMins = T == QType::Q4_K || T == QType::Q5_K;
  constexpr int kUnits = L.block_elems / 32;
  // The sign trick already removed the 8-bit types' offset.
  constexpr int kOffset = L.low_bits == 8 ? 0 : L.offset;
  const int64_t kk = a.kk, k32 = kk / 32, k16 = kk / 16;
  // As in quant_kernels_avx512.cpp: 256-value blocks keep their running sums in c.
  __m256 acc[2][kBlockScale ? 1 : R];
  if constexpr (!kBlockScale)
    for (int m = 0; m < R; ++m)
      for (int h = 0; h < 2; ++h)
        acc[h][m] = accumulate ? _mm256_loadu_ps(c + m * kQRows + 8 * h) : _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    if constexpr (Prefetch) {
      const char* pf = reinterpret_cast<const char*>(w) + kQPrefetchBytes;
      for (int l = 0; l < (L.bytes + 63) / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
    }
    const uint8_t* meta = w;
    for (int h = 0; h < 2; ++h) {
      __m256 d, dm = _mm256_setzero_ps();
      if constexpr (T == QType::Q8_K) {
        d = _mm256_loadu_ps(reinterpret_cast<const float*>(meta) + 8 * h);
      } else {
        d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 16 * h)));
        if constexpr (L.has_min)
          dm = _mm256_cvtph_ps(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 32 + 16 * h)));
      }
      __m256 blk[kBlockScale ? R : 1];
      for (int m = 0; m < (kBlockScale ? R : 0); ++m) blk[m] = _mm256_setzero_ps();
      for (int u = 0; u < kUnits; ++u) {
        const int64_t k0 = b * L.block_elems + u * 32;
        __m256i sc0 = _mm256_setzero_si256(), sc1 = sc0;
        if constexpr (kMins) {
          sc0 = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 64 + 16 * u + 8 * h)));
        } else if constexpr (T == QType::Q6_K) {
          sc0 = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 32 + 32 * u + 8 * h)));
          sc1 = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 48 + 32 * u + 8 * h)));
        }
        __m256i dot[R], dot_b[R];
        for (int m = 0; m < R; ++m) dot[m] = dot_b[m] = _mm256_setzero_si256();
        const uint8_t* chunk = w + chunk_offset(L, u);
        if constexpr (T == QType::Q6_K) {
          unit_dots<T, R>(chunk, 0, h, a.q + k0, kk, dot, std::make_integer_sequence<int, 4>{});
          unit_dots<T, R>(chunk, 1, h, a.q + k0 + 16, kk, dot_b,
                          std::make_integer_sequence<int, 4>{});
        } else {
          unit_dots<T, R>(chunk, 0, h, a.q + k0, kk, dot, std::make_integer_sequence<int, 8>{});
        }
        for (int m = 0; m < R; ++m) {
          const int32_t* s16 = a.s16 + m * k16 + k0 / 16;
          __m256i di = dot[m];
          if constexpr (T == QType::Q6_K) {
            di = _mm256_add_epi32(
                _mm256_mullo_epi32(_mm256_sub_epi32(di, _mm256_set1_epi32(kOffset * s16[0])), sc0),
                _mm256_mullo_epi32(_mm256_sub_epi32(dot_b[m], _mm256_set1_epi32(kOffset * s16[1])),
                                   sc1));
          } else if constexpr (kMins) {
            di = _mm256_mullo_epi32(di, sc0);
          } else if constexpr (kOffset != 0) {
            di = _mm256_sub_epi32(di, _mm256_set1_epi32(kOffset * (s16[0] + s16[1])));
          }
          const __m256 da = _mm256_set1_ps(a.d[m * k32 + k0 / 32]);
          if constexpr (kBlockScale) {
            blk[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(di), da, blk[m]);
          } else {
            acc[h][m] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(di), acc[h][m]);
            if constexpr (L.has_min)
              acc[h][m] = _mm256_fmadd_ps(dm, _mm256_set1_ps(a.ds[m * k32 + k0 / 32]), acc[h][m]);
          }
        }
      }
      if constexpr (kBlockScale) {
        const int64_t u0 = b * kUnits;
        for (int m = 0; m < R; ++m) {
          float* cm = c + m * kQRows + 8 * h;
          __m256 s = b == 0 && !accumulate ? _mm256_setzero_ps() : _mm256_loadu_ps(cm);
          s = _mm256_fmadd_ps(d, blk[m], s);
          if constexpr (kMins) {
            const float* ds = a.ds + m * k32 + u0;
            auto mn = [&](int u) {
              return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 192 + 16 * u + 8 * h))));
            };
            __m256 t[2] = {_mm256_mul_ps(mn(0), _mm256_set1_ps(ds[0])),
                           _mm256_mul_ps(mn(1), _mm256_set1_ps(ds[1]))};
            for (int u = 2; u < kUnits; ++u)
              t[u % 2] = _mm256_fmadd_ps(mn(u), _mm256_set1_ps(ds[u]), t[u % 2]);
            s = _mm256_fnmadd_ps(dm, _mm256_add_ps(t[0], t[1]), s);
          }
          _mm256_storeu_ps(cm, s);
        }
      }
    }
  }
  if constexpr (!kBlockScale) {
    for (int m = 0; m < R; ++m) {
      _mm256_storeu_ps(c + m * kQRows, acc[0][m]);
      _mm256_storeu_ps(c + m * kQRows + 8, acc[1][m]);
    }
  } else if (blocks == 0 && !accumulate) {
    for (int m = 0; m < R; ++m) {
      _mm256_storeu_ps(c + m * kQRows, _mm256_setzero_ps());
      _mm256_storeu_ps(c + m * kQRows + 8, _mm256_setzero_ps());
    }
  }
}

// One row's 32-value units: quantize_activations_scalar's numbers.
void quantize_rows(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q, float* d,
                   int32_t* s16, float* ds) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t b = 0; b < kk / 32; ++b) {
      const float* xb = x + m * ldx + 32 * b;
      __m256 v[4], mx = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(xb + 8 * i);
        mx = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), mx);  // a NaN leaves mx as it was
      }
      __m128 r = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
      r = _mm_max_ps(r, _mm_movehl_ps(r, r));
      r = _mm_max_ss(r, _mm_movehdup_ps(r));
      const float amax = _mm_cvtss_f32(r);
      const float scale = amax / 127.0f;
      const __m256 inv = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
      __m256i iv[4];
      for (int i = 0; i < 4; ++i) {
        __m256 t = _mm256_round_ps(_mm256_mul_ps(v[i], inv),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
        t = _mm256_max_ps(_mm256_min_ps(t, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
        iv[i] = _mm256_cvtps_epi32(t);
      }
      // int32 -> int8 in order: packs interleave 128-bit lanes, the permute undoes it.
      const __m256i p16a = _mm256_packs_epi32(iv[0], iv[1]),
                    p16b = _mm256_packs_epi32(iv[2], iv[3]);
      const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b),
                                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + m * kk + 32 * b), p8);
      int32_t sums[2];
      for (int h = 0; h < 2; ++h) {
        const __m256i s8 = _mm256_add_epi32(iv[2 * h], iv[2 * h + 1]);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
        sums[h] = _mm_cvtsi128_si32(s4);
      }
      d[m * (kk / 32) + b] = scale;
      s16[m * (kk / 16) + 2 * b] = sums[0];
      s16[m * (kk / 16) + 2 * b + 1] = sums[1];
      ds[m * (kk / 32) + b] = scale * static_cast<float>(sums[0] + sums[1]);
    }
}

#pragma GCC pop_options

constexpr int kMaxRows = 4;

template <QType T, bool Prefetch, int... R>
QKernelFn pick(int rows, std::integer_sequence<int, R...>) {
  QKernelFn fns[] = {kernel<T, R + 1, Prefetch>...};
  return rows >= 1 && rows <= kMaxRows ? fns[rows - 1] : nullptr;
}

void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16, float* ds) {
  quantize_rows(x, ldx, rows, kk, q, d, s16, ds);
}

QKernelFn quant_kernel(QType t, int rows, bool prefetch) {
  const auto seq = std::make_integer_sequence<int, kMaxRows>{};
  return dispatch_qtype(t, [&]<QType T>() {
    return prefetch ? pick<T, true>(rows, seq) : pick<T, false>(rows, seq);
  });
}

}  // namespace

const QuantKernels kQuantAvx2 = {Isa::Avx2, kMaxRows, quant_kernel, quantize_activations};

}  // namespace sandwich::kernels
