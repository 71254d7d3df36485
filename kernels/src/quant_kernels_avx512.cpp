// AVX-512 VNNI kernels for quantized weights: one 64-byte load is a 4-k group of a 16-row
// panel, vpdpbusd multiplies it (unsigned stored values) by a broadcast 4-k group of int8
// activations, per activation row of the tile; the offset and min are applied per scale unit
// in f32 (quant_layout.h). Several activation rows share every weight load.
#include <immintrin.h>

#include <utility>

#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")

// v shifted left by n bits (right for n < 0), in 16-bit lanes: the caller masks each byte.
template <int N>
__attribute__((always_inline)) inline __m512i shift16(__m512i v) {
  if constexpr (N > 0) return _mm512_slli_epi16(v, N);
  if constexpr (N < 0) return _mm512_srli_epi16(v, -N);
  return v;
}

// Stored values of 4-k group g (0..unit/4) of unit u: 16 rows x 4 unsigned bytes.
template <QType T, int G>
__attribute__((always_inline)) inline __m512i group(const uint8_t* pb, int u, __m512i lo_pair,
                                                    __m512i hv) {
  constexpr QLayout L = qlayout(T);
  __m512i v;
  if constexpr (L.low_bits == 8) {
    v = _mm512_loadu_si512(pb + (u * L.unit / 4 + G) * 64);
  } else {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    v = G % 2 == 0 ? _mm512_and_si512(lo_pair, m4)
                   : _mm512_and_si512(_mm512_srli_epi16(lo_pair, 4), m4);
  }
  if constexpr (L.high_bits == 1)
    v = _mm512_or_si512(v, _mm512_and_si512(shift16<4 - G>(hv), _mm512_set1_epi8(0x10)));
  if constexpr (L.high_bits == 2)
    v = _mm512_or_si512(v, _mm512_and_si512(shift16<4 - 2 * G>(hv), _mm512_set1_epi8(0x30)));
  return v;
}

template <QType T, int R, int... G>
__attribute__((always_inline)) inline void unit_dots(const uint8_t* pb, int u, const int8_t* x,
                                                     int64_t kk, __m512i (&dot)[2][R],
                                                     std::integer_sequence<int, G...>) {
  constexpr QLayout L = qlayout(T);
  constexpr int kChains = R <= 4 ? 2 : 1;  // two sum chains hide vpdpbusd's latency at small R
  __m512i hv = _mm512_setzero_si512();
  if constexpr (L.high_bits) hv = _mm512_loadu_si512(pb + L.qs_bytes + u * 64);
  __m512i pair = _mm512_setzero_si512();
  auto one = [&](auto gc) {
    constexpr int g = decltype(gc)::value;
    if constexpr (L.low_bits == 4 && g % 2 == 0)
      pair = _mm512_loadu_si512(pb + (u * L.unit / 8 + g / 2) * 64);
    const __m512i v = group<T, g>(pb, u, pair, hv);
    for (int m = 0; m < R; ++m) {
      int32_t a4;
      __builtin_memcpy(&a4, x + m * kk + 4 * g, 4);
      dot[g % kChains][m] = _mm512_dpbusd_epi32(dot[g % kChains][m], v, _mm512_set1_epi32(a4));
    }
  };
  (one(std::integral_constant<int, G>{}), ...);
}

template <QType T, int R>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  // Q6_K's 16-k units go in pairs: their int sums times their int8 scales add up in int32 and
  // meet the f32 activation scale once per 32 k, as every other type's units do.
  constexpr bool kPairs = T == QType::Q6_K;
  constexpr int kUnits = L.block_elems / 32;
  __m512 acc[R];
  for (int m = 0; m < R; ++m)
    acc[m] = accumulate ? _mm512_loadu_ps(c + m * kQRows) : _mm512_setzero_ps();
  const int64_t kk = a.kk;
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    const uint8_t* meta = w + L.qs_bytes + L.qh_bytes;
    __m512 d, dm = _mm512_setzero_ps();
    if constexpr (T == QType::Q8_K) {
      d = _mm512_loadu_ps(meta);
    } else {
      d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta)));
      if constexpr (L.has_min)
        dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta + 32)));
    }
    for (int u = 0; u < kUnits; ++u) {
      const int64_t k0 = b * L.block_elems + u * 32;
      __m512 s = d, cm = dm;
      __m512i sc0, sc1;
      if constexpr (T == QType::Q4_K || T == QType::Q5_K) {
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 64 + 16 * u));
        const __m128i mn =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 64 + 128 + 16 * u));
        s = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
        // -(dmin * m): the sign flipped after the product, as the scalar reference does.
        cm = _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(_mm512_mul_ps(dm, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn)))),
            _mm512_set1_epi32(static_cast<int32_t>(0x80000000u))));
      } else if constexpr (kPairs) {
        sc0 = _mm512_cvtepi8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 32 + 32 * u)));
        sc1 = _mm512_cvtepi8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 48 + 32 * u)));
      }
      __m512i dot[2][R], dot_b[2][R];
      for (int m = 0; m < R; ++m)
        dot[0][m] = dot[1][m] = dot_b[0][m] = dot_b[1][m] = _mm512_setzero_si512();
      if constexpr (kPairs) {
        unit_dots<T, R>(w, 2 * u, a.q + k0, kk, dot, std::make_integer_sequence<int, 4>{});
        unit_dots<T, R>(w, 2 * u + 1, a.q + k0 + 16, kk, dot_b,
                        std::make_integer_sequence<int, 4>{});
      } else {
        unit_dots<T, R>(w, u, a.q + k0, kk, dot, std::make_integer_sequence<int, 8>{});
      }
      for (int m = 0; m < R; ++m) {
        const int32_t* s16 = a.s16 + m * (kk / 16) + k0 / 16;
        __m512i di = R <= 4 ? _mm512_add_epi32(dot[0][m], dot[1][m]) : dot[0][m];
        const int32_t asum = s16[0] + s16[1];
        if constexpr (kPairs) {
          __m512i db = R <= 4 ? _mm512_add_epi32(dot_b[0][m], dot_b[1][m]) : dot_b[0][m];
          di = _mm512_mullo_epi32(_mm512_sub_epi32(di, _mm512_set1_epi32(L.offset * s16[0])), sc0);
          db = _mm512_mullo_epi32(_mm512_sub_epi32(db, _mm512_set1_epi32(L.offset * s16[1])), sc1);
          di = _mm512_add_epi32(di, db);
        } else if constexpr (L.offset != 0) {
          di = _mm512_sub_epi32(di, _mm512_set1_epi32(L.offset * asum));
        }
        __m512 t = _mm512_mul_ps(s, _mm512_cvtepi32_ps(di));
        if constexpr (L.has_min)
          t = _mm512_fmadd_ps(cm, _mm512_set1_ps(static_cast<float>(asum)), t);
        acc[m] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.d[m * (kk / 32) + k0 / 32]), acc[m]);
      }
    }
  }
  for (int m = 0; m < R; ++m) _mm512_storeu_ps(c + m * kQRows, acc[m]);
}

#pragma GCC pop_options

constexpr int kMaxRows = 8;

template <QType T, int... R>
QKernelFn pick(int rows, std::integer_sequence<int, R...>) {
  QKernelFn fns[] = {kernel<T, R + 1>...};
  return rows >= 1 && rows <= kMaxRows ? fns[rows - 1] : nullptr;
}

}  // namespace

QKernelFn quant_kernel_avx512(QType t, int rows) {
  const auto seq = std::make_integer_sequence<int, kMaxRows>{};
  switch (t) {
    case QType::Q4_0:
      return pick<QType::Q4_0>(rows, seq);
    case QType::Q4_1:
      return pick<QType::Q4_1>(rows, seq);
    case QType::Q5_0:
      return pick<QType::Q5_0>(rows, seq);
    case QType::Q5_1:
      return pick<QType::Q5_1>(rows, seq);
    case QType::Q8_0:
      return pick<QType::Q8_0>(rows, seq);
    case QType::Q4_K:
      return pick<QType::Q4_K>(rows, seq);
    case QType::Q5_K:
      return pick<QType::Q5_K>(rows, seq);
    case QType::Q6_K:
      return pick<QType::Q6_K>(rows, seq);
    case QType::Q8_K:
      return pick<QType::Q8_K>(rows, seq);
  }
  return nullptr;
}

}  // namespace sandwich::kernels
