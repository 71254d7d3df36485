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

// Stored values of 4-k group G of unit u, rows 8h..8h+7.
template <QType T, int G>
__attribute__((always_inline)) inline __m256i group(const uint8_t* pb, int u, int h,
                                                    __m256i lo_pair, __m256i hv) {
  constexpr QLayout L = qlayout(T);
  __m256i v;
  if constexpr (L.low_bits == 8) {
    v = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(pb + (u * L.unit / 4 + G) * 64 + 32 * h));
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
__attribute__((always_inline)) inline void unit_dots(const uint8_t* pb, int u, int h,
                                                     const int8_t* x, int64_t kk, __m256i (&dot)[R],
                                                     std::integer_sequence<int, G...>) {
  constexpr QLayout L = qlayout(T);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i hv = _mm256_setzero_si256();
  if constexpr (L.high_bits)
    hv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + L.qs_bytes + u * 64 + 32 * h));
  __m256i pair = _mm256_setzero_si256();
  auto one = [&](auto gc) {
    constexpr int g = decltype(gc)::value;
    if constexpr (L.low_bits == 4 && g % 2 == 0)
      pair = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(pb + (u * L.unit / 8 + g / 2) * 64 + 32 * h));
    __m256i v = group<T, g>(pb, u, h, pair, hv);
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

template <QType T, int R>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  constexpr bool kPairs = T == QType::Q6_K;  // as in quant_kernels_avx512.cpp
  constexpr int kUnits = L.block_elems / 32;
  // The sign trick already removed the 8-bit types' offset.
  constexpr int kOffset = L.low_bits == 8 ? 0 : L.offset;
  __m256 acc[2][R];
  for (int m = 0; m < R; ++m)
    for (int h = 0; h < 2; ++h)
      acc[h][m] = accumulate ? _mm256_loadu_ps(c + m * kQRows + 8 * h) : _mm256_setzero_ps();
  const int64_t kk = a.kk;
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    const uint8_t* meta = w + L.qs_bytes + L.qh_bytes;
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
      for (int u = 0; u < kUnits; ++u) {
        const int64_t k0 = b * L.block_elems + u * 32;
        __m256 s = d, cm = dm;
        __m256i sc0, sc1;
        if constexpr (T == QType::Q4_K || T == QType::Q5_K) {
          const __m128i sc =
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 64 + 16 * u + 8 * h));
          const __m128i mn =
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 64 + 128 + 16 * u + 8 * h));
          s = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc)));
          cm = _mm256_xor_ps(_mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))),
                             _mm256_set1_ps(-0.0f));
        } else if constexpr (kPairs) {
          sc0 = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 32 + 32 * u + 8 * h)));
          sc1 = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 48 + 32 * u + 8 * h)));
        }
        __m256i dot[R], dot_b[R];
        for (int m = 0; m < R; ++m) dot[m] = dot_b[m] = _mm256_setzero_si256();
        if constexpr (kPairs) {
          unit_dots<T, R>(w, 2 * u, h, a.q + k0, kk, dot, std::make_integer_sequence<int, 4>{});
          unit_dots<T, R>(w, 2 * u + 1, h, a.q + k0 + 16, kk, dot_b,
                          std::make_integer_sequence<int, 4>{});
        } else {
          unit_dots<T, R>(w, u, h, a.q + k0, kk, dot, std::make_integer_sequence<int, 8>{});
        }
        for (int m = 0; m < R; ++m) {
          const int32_t* s16 = a.s16 + m * (kk / 16) + k0 / 16;
          const int32_t asum = s16[0] + s16[1];
          __m256i di = dot[m];
          if constexpr (kPairs) {
            const __m256i da =
                _mm256_mullo_epi32(_mm256_sub_epi32(di, _mm256_set1_epi32(kOffset * s16[0])), sc0);
            const __m256i db = _mm256_mullo_epi32(
                _mm256_sub_epi32(dot_b[m], _mm256_set1_epi32(kOffset * s16[1])), sc1);
            di = _mm256_add_epi32(da, db);
          } else if constexpr (kOffset != 0) {
            di = _mm256_sub_epi32(di, _mm256_set1_epi32(kOffset * asum));
          }
          __m256 t = _mm256_mul_ps(s, _mm256_cvtepi32_ps(di));
          if constexpr (L.has_min)
            t = _mm256_fmadd_ps(cm, _mm256_set1_ps(static_cast<float>(asum)), t);
          acc[h][m] = _mm256_fmadd_ps(t, _mm256_set1_ps(a.d[m * (kk / 32) + k0 / 32]), acc[h][m]);
        }
      }
    }
  }
  for (int m = 0; m < R; ++m) {
    _mm256_storeu_ps(c + m * kQRows, acc[0][m]);
    _mm256_storeu_ps(c + m * kQRows + 8, acc[1][m]);
  }
}

#pragma GCC pop_options

constexpr int kMaxRows = 4;

template <QType T, int... R>
QKernelFn pick(int rows, std::integer_sequence<int, R...>) {
  QKernelFn fns[] = {kernel<T, R + 1>...};
  return rows >= 1 && rows <= kMaxRows ? fns[rows - 1] : nullptr;
}

}  // namespace

QKernelFn quant_kernel_avx2(QType t, int rows) {
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
