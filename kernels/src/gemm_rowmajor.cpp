// First GEMM implementation: weights kept row-major (panel = 0) and each output a dot product
// streamed over k. Correct for every shape and dtype; the packed micro-kernel driver replaces it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <immintrin.h>

#include "kernels/gemm.h"

namespace sandwich::kernels {
namespace {

inline float silu(float v) { return v / (1.0f + std::exp(-v)); }

#if defined(__AVX512F__)
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const bf16_t* p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline __m512 load16_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16_masked(const bf16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
#endif

// Dots of R weight rows with one activation row.
template <class W, int R>
inline void dot_rows(const W* const* w, const float* x, int64_t k, float* out) {
#if defined(__AVX512F__)
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 xv = _mm512_loadu_ps(x + i);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(load16(w[r] + i), xv, acc[r]);
  }
  if (i < k) {
    __mmask16 m = static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(load16_masked(w[r] + i, m), xv, acc[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
#else
  for (int r = 0; r < R; ++r) {
    float s = 0;
    for (int64_t i = 0; i < k; ++i) s += load_as_f32(w[r], i, std::is_same_v<W, float> ? DType::F32 : DType::BF16) * x[i];
    out[r] = s;
  }
#endif
}

template <class W>
void gemm_rows(const PackedWeight& w, const GemmArgs& a, int64_t n0, int64_t n1, int64_t k0,
               int64_t kk, const PackedWeight* up, float* y_tmp_unused) {
  (void)y_tmp_unused;
  constexpr int R = 4;
  const W* base = static_cast<const W*>(w.data);
  const W* ubase = up ? static_cast<const W*>(up->data) : nullptr;
  int64_t n = n0;
  for (; n < n1; n += R) {
    const int rows = static_cast<int>(std::min<int64_t>(R, n1 - n));
    const W* wr[R];
    const W* ur[R];
    for (int r = 0; r < R; ++r) {
      int64_t row = n + std::min(r, rows - 1);
      wr[r] = base + row * w.k + k0;
      if (ubase) ur[r] = ubase + row * w.k + k0;
    }
    for (int64_t i = 0; i < a.m; ++i) {
      const float* x = a.x + i * a.ldx;
      float out[R], uo[R];
      dot_rows<W, R>(wr, x, kk, out);
      if (ubase) dot_rows<W, R>(ur, x, kk, uo);
      float* y = a.y + i * a.ldy + (n - a.n0);
      for (int r = 0; r < rows; ++r) {
        float v = ubase ? silu(out[r]) * uo[r] : out[r];
        if (a.epilogue == Epilogue::Accumulate) y[r] += v; else y[r] = v;
      }
    }
  }
}

void run(const PackedWeight& w, const PackedWeight* up, const GemmArgs& a, ThreadTeam& team) {
  const int64_t n1 = a.n1 < 0 ? w.n : a.n1;
  const int64_t k1 = a.k1 < 0 ? w.k : a.k1;
  if (a.n0 < 0 || a.n0 > n1 || n1 > w.n || a.k0 < 0 || a.k0 > k1 || k1 > w.k)
    throw std::invalid_argument("gemm: shard range outside the weight");
  GemmArgs args = a;
  args.n1 = n1;
  const int64_t cols = n1 - a.n0;
  const int64_t kk = k1 - a.k0;
  team.run([&](int tid, int nt) {
    // Split output columns in multiples of 4 rows.
    const int64_t groups = (cols + 3) / 4;
    const int64_t g0 = groups * tid / nt, g1 = groups * (tid + 1) / nt;
    const int64_t b = a.n0 + g0 * 4, e = std::min(n1, a.n0 + g1 * 4);
    if (b >= e) return;
    if (w.dtype == DType::F32)
      gemm_rows<float>(w, args, b, e, a.k0, kk, up, nullptr);
    else
      gemm_rows<bf16_t>(w, args, b, e, a.k0, kk, up, nullptr);
  });
}

}  // namespace

PackedWeight plan_packed_weight(int64_t n, int64_t k, DType storage) {
  if (n <= 0 || k <= 0) throw std::invalid_argument("weight must have positive shape");
  if (storage == DType::F16) throw std::invalid_argument("weights are stored as f32 or bf16");
  PackedWeight w;
  w.dtype = storage;
  w.n = n;
  w.k = k;
  w.panel = 0;
  w.bytes = static_cast<size_t>(n) * static_cast<size_t>(k) * dtype_size(storage);
  return w;
}

void pack_weight(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map, ThreadTeam* team) {
  const size_t es = dtype_size(src_type);
  auto pack_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t sr = row_map ? row_map[r] : r;
      const auto* s = static_cast<const uint8_t*>(src) + static_cast<size_t>(sr * src_stride) * es;
      auto* d = static_cast<uint8_t*>(w.data) + static_cast<size_t>(r * w.k) * dtype_size(w.dtype);
      if (src_type == w.dtype) {
        std::memcpy(d, s, static_cast<size_t>(w.k) * es);
      } else {
        for (int64_t c = 0; c < w.k; ++c) store_from_f32(d, c, w.dtype, load_as_f32(s, c, src_type));
      }
    }
  };
  if (team)
    team->parallel_for(w.n, [&](int64_t b, int64_t e, int) { pack_rows(b, e); });
  else
    pack_rows(0, w.n);
}

void unpack_row(const PackedWeight& w, int64_t r, float* out) {
  const auto* d = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r * w.k) * dtype_size(w.dtype);
  for (int64_t c = 0; c < w.k; ++c) out[c] = load_as_f32(d, c, w.dtype);
}

void gemm(const PackedWeight& w, const GemmArgs& a, ThreadTeam& team) { run(w, nullptr, a, team); }

void gemm_silu_mul(const PackedWeight& gate, const PackedWeight& up, const GemmArgs& a,
                   ThreadTeam& team) {
  if (gate.n != up.n || gate.k != up.k || gate.dtype != up.dtype)
    throw std::invalid_argument("gemm_silu_mul: gate and up differ in shape or type");
  run(gate, &up, a, team);
}

}  // namespace sandwich::kernels
