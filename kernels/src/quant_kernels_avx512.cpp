// AVX-512 VNNI kernels for quantized weights: one 64-byte load is a 4-k group of a 16-row
// panel, vpdpbusd multiplies it (unsigned stored values) by a broadcast 4-k group of int8
// activations, per activation row of the tile; scales, offsets and mins follow the arithmetic
// of quant_layout.h. Several activation rows share every weight load. Where the CPU has GFNI,
// one vgf2p8affineqb moves a nibble or the high bits of 64 weights into place (else a shift
// and a mask).
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "kernels/cpu_features.h"
#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,gfni,fma,f16c")

// The GF(2) affine matrix whose output bit i is input bit from[i] (-1: zero), per byte.
constexpr uint64_t bit_matrix(int b0, int b1, int b2, int b3, int b4, int b5, int b6, int b7) {
  const int from[8] = {b0, b1, b2, b3, b4, b5, b6, b7};
  uint64_t m = 0;
  for (int i = 0; i < 8; ++i)
    if (from[i] >= 0) m |= uint64_t{1} << from[i] << (8 * (7 - i));
  return m;
}
constexpr uint64_t kHighNibble = bit_matrix(4, 5, 6, 7, -1, -1, -1, -1);

__attribute__((always_inline)) inline __m512i affine(__m512i v, uint64_t m) {
  return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(static_cast<int64_t>(m)), 0);
}

// v shifted left by n bits (right for n < 0), in 16-bit lanes: the caller masks each byte.
template <int N>
__attribute__((always_inline)) inline __m512i shift16(__m512i v) {
  if constexpr (N > 0) return _mm512_slli_epi16(v, N);
  if constexpr (N < 0) return _mm512_srli_epi16(v, -N);
  return v;
}

// The high bits of 4-k group G in place (bit 4, or bits 4-5), nothing else.
template <QType T, int G, bool Gfni>
__attribute__((always_inline)) inline __m512i high_bits(__m512i hv) {
  constexpr QLayout L = qlayout(T);
  if constexpr (L.high_bits == 1) {
    if constexpr (Gfni) return affine(hv, bit_matrix(-1, -1, -1, -1, G, -1, -1, -1));
    return _mm512_and_si512(shift16<4 - G>(hv), _mm512_set1_epi8(0x10));
  } else {
    if constexpr (Gfni) return affine(hv, bit_matrix(-1, -1, -1, -1, 2 * G, 2 * G + 1, -1, -1));
    return _mm512_and_si512(shift16<4 - 2 * G>(hv), _mm512_set1_epi8(0x30));
  }
}

// Whether odd groups go as 16 x their values, in a chain of their own (see group).
constexpr bool sixteen_times(QType t) {
  return qlayout(t).low_bits == 4 && qlayout(t).high_bits == 0;
}

// Independent vpdpbusd chains per activation row: enough to hide its latency when few rows
// share a weight load, two at least where odd groups are kept apart.
constexpr int num_chains(QType t, int rows) {
  return rows <= 2 ? 4 : rows <= 4 || sixteen_times(t) ? 2 : 1;
}

// Stored values of 4-k group G (0..unit/4) of scale unit `sub` of a chunk: 16 rows x 4 unsigned
// bytes.
template <QType T, int G, bool Gfni>
__attribute__((always_inline)) inline __m512i group(const uint8_t* chunk, int sub, __m512i lo_pair,
                                                    __m512i hv) {
  constexpr QLayout L = qlayout(T);
  if constexpr (L.low_bits == 8) return _mm512_loadu_si512(chunk + (sub * L.unit / 4 + G) * 64);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Plain 4-bit types take an odd group as 16 x its values (the high nibbles in place): their
  // chain is divided by 16 at the end (sixteen_times), one shift per row instead of per group.
  if constexpr (sixteen_times(T) && G % 2 == 1) return _mm512_andnot_si512(m4, lo_pair);
  if constexpr (G % 2 == 0) {
    if constexpr (L.high_bits == 0) return _mm512_and_si512(lo_pair, m4);
    // (pair & 0x0F) | high in one vpternlogd.
    return _mm512_ternarylogic_epi32(lo_pair, m4, (high_bits<T, G, Gfni>(hv)), 0xEA);
  } else {
    const __m512i lo =
        Gfni ? affine(lo_pair, kHighNibble) : _mm512_and_si512(_mm512_srli_epi16(lo_pair, 4), m4);
    if constexpr (L.high_bits == 0) return lo;
    return _mm512_or_si512(lo, high_bits<T, G, Gfni>(hv));
  }
}

// The activations' 4-k group as a vpdpbusd operand: a broadcast that folds into the load.
__attribute__((always_inline)) inline __m512i act4(const int8_t* p) {
  return _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(p));
}

template <QType T, int R, bool Gfni, int... G>
__attribute__((always_inline)) inline void unit_dots(const uint8_t* chunk, int sub, const int8_t* x,
                                                     int64_t kk, __m512i (&dot)[4][R],
                                                     std::integer_sequence<int, G...>) {
  constexpr QLayout L = qlayout(T);
  // Two sum chains hide vpdpbusd's latency at small R (and keep 16 x values apart).
  constexpr int kChains = num_chains(T, R);
  __m512i hv = _mm512_setzero_si512();
  if constexpr (L.high_bits) hv = _mm512_loadu_si512(chunk + L.chunk_qs + sub * 64);
  __m512i pair = _mm512_setzero_si512();
  auto one = [&](auto gc) {
    constexpr int g = decltype(gc)::value;
    if constexpr (L.low_bits == 4 && g % 2 == 0) {
      pair = _mm512_loadu_si512(chunk + (sub * L.unit / 8 + g / 2) * 64);
      __asm__("" : "+v"(pair));  // one load for both groups, not one folded into each
    }
    const __m512i v = group<T, g, Gfni>(chunk, sub, pair, hv);
    for (int m = 0; m < R; ++m)
      dot[g % kChains][m] = _mm512_dpbusd_epi32(dot[g % kChains][m], v, act4(x + m * kk + 4 * g));
  };
  (one(std::integral_constant<int, G>{}), ...);
}

// Sums of a unit's groups in chains: g % chains. The even chains hold even groups, so where odd
// groups are 16 x their values (sixteen_times) the odd chains are divided at the end.
template <QType T, int R>
__attribute__((always_inline)) inline __m512i chains(const __m512i (&dot)[4][R], int m) {
  constexpr int n = num_chains(T, R);
  __m512i even = dot[0][m], odd = n > 1 ? dot[1][m] : _mm512_setzero_si512();
  if constexpr (n == 4) {
    even = _mm512_add_epi32(even, dot[2][m]);
    odd = _mm512_add_epi32(odd, dot[3][m]);
  }
  if constexpr (n == 1) return even;
  if constexpr (sixteen_times(T)) odd = _mm512_srai_epi32(odd, 4);
  return _mm512_add_epi32(even, odd);
}

template <QType T, int R, bool Gfni, bool Prefetch>
void kernel(const uint8_t* w, int64_t blocks, const QActs& a, float* c, bool accumulate) {
  constexpr QLayout L = qlayout(T);
  constexpr bool kBlockScale = L.block_elems == kQKK;
  constexpr bool kMins = T == QType::Q4_K || T == QType::Q5_K;
  constexpr int kUnits = L.block_elems / 32;
  constexpr int kUnitBytes = L.bytes / kUnits;
  const int64_t kk = a.kk, k32 = kk / 32, k16 = kk / 16;
  // 32-value blocks keep the sums in registers; 256-value ones in c, touched once per block,
  // which leaves the registers to the block's own sums.
  __m512 acc[kBlockScale ? 1 : R];
  if constexpr (!kBlockScale)
    for (int m = 0; m < R; ++m)
      acc[m] = accumulate ? _mm512_loadu_ps(c + m * kQRows) : _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b, w += L.bytes) {
    const uint8_t* meta = w;
    __m512 d, dm = _mm512_setzero_ps();
    if constexpr (T == QType::Q8_K) {
      d = _mm512_loadu_ps(meta);
    } else {
      d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta)));
      if constexpr (L.has_min)
        dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta + 32)));
    }
    __m512 blk[kBlockScale ? R : 1];
    for (int m = 0; m < (kBlockScale ? R : 0); ++m) blk[m] = _mm512_setzero_ps();
    for (int u = 0; u < kUnits; ++u) {
      if constexpr (Prefetch) {
        const char* pf = reinterpret_cast<const char*>(w) + kQPrefetchBytes + u * kUnitBytes;
#pragma GCC unroll 8
        for (int l = 0; l < (kUnitBytes + 63) / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
      }
      const int64_t k0 = b * L.block_elems + u * 32;
      __m512i dot[4][R], dot_b[4][R];
      for (int c = 0; c < num_chains(T, R); ++c)
        for (int m = 0; m < R; ++m) dot[c][m] = dot_b[c][m] = _mm512_setzero_si512();
      const uint8_t* chunk = w + chunk_offset(L, u);
      if constexpr (T == QType::Q6_K) {
        unit_dots<T, R, Gfni>(chunk, 0, a.q + k0, kk, dot, std::make_integer_sequence<int, 4>{});
        unit_dots<T, R, Gfni>(chunk, 1, a.q + k0 + 16, kk, dot_b,
                              std::make_integer_sequence<int, 4>{});
      } else {
        unit_dots<T, R, Gfni>(chunk, 0, a.q + k0, kk, dot, std::make_integer_sequence<int, 8>{});
      }
      __m512i sc0 = _mm512_setzero_si512(), sc1 = sc0;
      if constexpr (kMins) {
        sc0 = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 64 + 16 * u)));
      } else if constexpr (T == QType::Q6_K) {
        sc0 = _mm512_cvtepi8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 32 + 32 * u)));
        sc1 = _mm512_cvtepi8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 48 + 32 * u)));
      }
      for (int m = 0; m < R; ++m) {
        const int32_t* s16 = a.s16 + m * k16 + k0 / 16;
        __m512i di = chains<T, R>(dot, m);
        if constexpr (T == QType::Q6_K) {
          const __m512i db = chains<T, R>(dot_b, m);
          di = _mm512_add_epi32(
              _mm512_mullo_epi32(_mm512_sub_epi32(di, _mm512_set1_epi32(L.offset * s16[0])), sc0),
              _mm512_mullo_epi32(_mm512_sub_epi32(db, _mm512_set1_epi32(L.offset * s16[1])), sc1));
        } else if constexpr (kMins) {
          di = _mm512_mullo_epi32(di, sc0);
        } else if constexpr (L.offset != 0) {
          di = _mm512_sub_epi32(di, _mm512_set1_epi32(L.offset * (s16[0] + s16[1])));
        }
        const __m512 da = _mm512_set1_ps(a.d[m * k32 + k0 / 32]);
        if constexpr (kBlockScale) {
          blk[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(di), da, blk[m]);
        } else {
          acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(di), acc[m]);
          if constexpr (L.has_min)
            acc[m] = _mm512_fmadd_ps(dm, _mm512_set1_ps(a.ds[m * k32 + k0 / 32]), acc[m]);
        }
      }
    }
    if constexpr (kBlockScale) {
      __m512 mn[kMins ? kUnits : 1];
      if constexpr (kMins)
        for (int u = 0; u < kUnits; ++u)
          mn[u] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 192 + 16 * u))));
      const int64_t u0 = b * kUnits;
      for (int m = 0; m < R; ++m) {
        __m512 s = b == 0 && !accumulate ? _mm512_setzero_ps() : _mm512_loadu_ps(c + m * kQRows);
        s = _mm512_fmadd_ps(d, blk[m], s);
        if constexpr (kMins) {
          const float* ds = a.ds + m * k32 + u0;
          __m512 t[2] = {_mm512_mul_ps(mn[0], _mm512_set1_ps(ds[0])),
                         _mm512_mul_ps(mn[1], _mm512_set1_ps(ds[1]))};
          for (int u = 2; u < kUnits; ++u)
            t[u % 2] = _mm512_fmadd_ps(mn[u], _mm512_set1_ps(ds[u]), t[u % 2]);
          s = _mm512_fnmadd_ps(dm, _mm512_add_ps(t[0], t[1]), s);
        }
        _mm512_storeu_ps(c + m * kQRows, s);
      }
    }
  }
  if constexpr (!kBlockScale)
    for (int m = 0; m < R; ++m) _mm512_storeu_ps(c + m * kQRows, acc[m]);
  else if (blocks == 0 && !accumulate)
    for (int m = 0; m < R; ++m) _mm512_storeu_ps(c + m * kQRows, _mm512_setzero_ps());
}

// One 32-value unit of one row: quantize_activations_scalar's numbers.
__attribute__((always_inline)) inline void quantize_unit(const float* x, int8_t* q, float* d,
                                                         int32_t* s16, float* ds) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  // A NaN is skipped, as std::max skips it in the scalar quantizer.
  const __m512 m0 = _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps());
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x1), m0));
  const float scale = amax / 127.0f;
  const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
  int32_t sums[2];
  for (int h = 0; h < 2; ++h) {
    __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(h ? x1 : x0, inv),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-127.0f));
    const __m512i i = _mm512_cvtps_epi32(v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * h), _mm512_cvtepi32_epi8(i));
    sums[h] = _mm512_reduce_add_epi32(i);
  }
  *d = scale;
  s16[0] = sums[0];
  s16[1] = sums[1];
  *ds = scale * static_cast<float>(sums[0] + sums[1]);
}

void quantize_rows(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q, float* d,
                   int32_t* s16, float* ds) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t b = 0; b < kk / 32; ++b)
      quantize_unit(x + m * ldx + 32 * b, q + m * kk + 32 * b, d + m * (kk / 32) + b,
                    s16 + m * (kk / 16) + 2 * b, ds + m * (kk / 32) + b);
}

#pragma GCC pop_options

constexpr int kMaxRows = 8;

template <QType T, bool Gfni, bool Prefetch, int... R>
QKernelFn pick_rows(int rows, std::integer_sequence<int, R...>) {
  QKernelFn fns[] = {kernel<T, R + 1, Gfni, Prefetch>...};
  return rows >= 1 && rows <= static_cast<int>(sizeof...(R)) ? fns[rows - 1] : nullptr;
}

// Only the types with high bits use GFNI (plain 4-bit ones need no shift, sixteen_times), and
// only short tiles prefetch: taller ones are prefill's, bound by arithmetic, not by DRAM. The
// other combinations are not compiled.
constexpr bool uses_gfni(QType t) {
  return qlayout(t).high_bits != 0;
}
constexpr int kMaxPrefetchRows = 4;

template <QType T, bool Gfni>
QKernelFn pick_variant(int rows, bool prefetch) {
  if (prefetch && rows <= kMaxPrefetchRows)
    return pick_rows<T, Gfni, true>(rows, std::make_integer_sequence<int, kMaxPrefetchRows>{});
  return pick_rows<T, Gfni, false>(rows, std::make_integer_sequence<int, kMaxRows>{});
}

template <QType T>
QKernelFn pick(int rows, bool prefetch) {
  if constexpr (uses_gfni(T))
    if (cpu_has_gfni()) return pick_variant<T, true>(rows, prefetch);
  return pick_variant<T, false>(rows, prefetch);
}

void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t kk, int8_t* q,
                          float* d, int32_t* s16, float* ds) {
  quantize_rows(x, ldx, rows, kk, q, d, s16, ds);
}

QKernelFn quant_kernel(QType t, int rows, bool prefetch) {
  return dispatch_qtype(t, [&]<QType T>() { return pick<T>(rows, prefetch); });
}

}  // namespace

const QuantKernels kQuantAvx512 = {Isa::Avx512, kMaxRows, quant_kernel, quantize_activations};

}  // namespace sandwich::kernels
