#pragma once
// The pass driver the vector bodies of attention share: a call's rows (token t = r / group, head
// g = r % group) go in passes of `pass` rows; a pass walks the KV blocks once, `step` at a time,
// every tile of up to Rows rows taking each step through the body's own tile_step. Include it
// inside the body's `#pragma GCC target` region: each body compiles its own copy, with internal
// linkage, so no ISA's instantiation can stand in for another's at link time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention.h"
#include "scratch_buffer.h"

namespace sandwich::kernels {
namespace {

// Per-row state of a pass: query and output rows, visible positions, running max and sum.
struct PassRows {
  const float* q[kMaxPassRows];
  float* out[kMaxPassRows];
  float* acc[kMaxPassRows];
  int32_t limit[kMaxPassRows];
  float m[kMaxPassRows], l[kMaxPassRows];
};

// Blocks [b, nb) in calls of NB blocks, then of fewer (halving), never more than MaxNB a call:
// blocks(std::integral_constant<int, n>, first) takes n blocks from first. b ends at nb.
template <int NB, int MaxNB, class Blocks>
__attribute__((always_inline)) inline void in_calls_of(int32_t& b, int32_t nb, Blocks&& blocks) {
  if constexpr (NB <= MaxNB)
    for (; b + NB <= nb; b += NB) blocks(std::integral_constant<int, NB>{}, b);
  if constexpr (NB > 1) in_calls_of<NB / 2, MaxNB>(b, nb, blocks);
}

// Positions of the block that starts at `first` which a row seeing `limit` positions sees. A row
// that sees none of it gets zero probabilities and keeps its accumulators (corr 1): 0 then.
__attribute__((always_inline)) inline int32_t visible_or_skip(int32_t limit, int32_t first,
                                                              float* sc, float& corr) {
  const int32_t visible = limit - first;
  if (visible > 0) return visible;
  std::fill(sc, sc + kKVBlock, 0.0f);
  corr = 1.0f;
  return 0;
}

// The K and V blocks a tile's step [b0, b0 + nb) reads, of one KV head.
template <class T>
struct StepBlocks {
  const T* k[kMaxStepBlocks];
  const T* v[kMaxStepBlocks];
  __attribute__((always_inline)) StepBlocks(const PagedKV& kv, const int32_t* block_table,
                                            int32_t kv_head, int32_t b0, int32_t nb) {
    for (int32_t b = 0; b < nb; ++b) {
      const int32_t blk = block_table[b0 + b];
      k[b] = kv.key<T>(blk, kv_head);
      v[b] = kv.value<T>(blk, kv_head);
    }
  }
};

// The passes of one call. acc holds `pass` rows of `stride` floats, of which the first
// `zeroed` start at 0. tile_step(std::integral_constant<int, NR>, i0, b0, nb) runs the NR rows
// from i0 over blocks [b0, b0 + nb).
template <int Rows, class TileStep>
__attribute__((always_inline)) inline void run_passes(PassRows& r, float* acc, int32_t stride,
                                                      int32_t zeroed, const float* q, int64_t ldq,
                                                      float* out, int64_t ldo, int32_t n_tok,
                                                      int32_t group, int32_t start_pos, int32_t hd,
                                                      int32_t pass, int32_t step,
                                                      TileStep&& tile_step) {
  const int32_t n_rows = n_tok * group;
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
      std::fill(r.acc[i], r.acc[i] + zeroed, 0.0f);
    }
    const int32_t n_blocks = (max_limit + kKVBlock - 1) / kKVBlock;
    // Rows go by token, so a tile's last row sees the most positions.
    int32_t tile_blocks[kMaxPassRows / Rows];
    for (int32_t i0 = 0; i0 < np; i0 += Rows)
      tile_blocks[i0 / Rows] = (r.limit[std::min(i0 + Rows, np) - 1] + kKVBlock - 1) / kKVBlock;
    for (int32_t b0 = 0; b0 < n_blocks; b0 += step)
      for (int32_t i0 = 0; i0 < np; i0 += Rows) {
        const int nr = std::min<int32_t>(Rows, np - i0);
        const int32_t nb = std::min(step, tile_blocks[i0 / Rows] - b0);
        if (nb <= 0) continue;
        switch (nr) {
          case 1:
            tile_step(std::integral_constant<int, 1>{}, i0, b0, nb);
            break;
          case 2:
            tile_step(std::integral_constant<int, 2>{}, i0, b0, nb);
            break;
          case 3:
            tile_step(std::integral_constant<int, 3>{}, i0, b0, nb);
            break;
          default:
            tile_step(std::integral_constant<int, Rows>{}, i0, b0, nb);
            break;
        }
      }
    for (int32_t i = 0; i < np; ++i) {
      const float inv = 1.0f / r.l[i];
      for (int32_t d = 0; d < hd; ++d) r.out[i][d] = r.acc[i][d] * inv;
    }
  }
}

// A body's attention over K/V elements T. Body supplies tile<NR, T>(rows, i0, kv, block_table,
// kv_head, b0, nb, scale), whole_tiles<T>(pass, step, call...) for a faster path of its own
// (returns whether it ran the call), and kStride, the vector width accumulator rows round to.
template <int Rows, class Body, class T>
void attention_passes(const PagedKV& kv, const int32_t* block_table, int32_t kv_head,
                      const float* q, int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos,
                      float scale, float* out, int64_t ldo, const AttentionParams& params) {
  const int32_t hd = kv.head_dim;
  const int32_t pass = (std::clamp(params.pass_rows, 1, kMaxPassRows) + Rows - 1) / Rows * Rows;
  const int32_t step = std::clamp(params.kv_blocks, 1, kMaxStepBlocks);
  if (Body::template whole_tiles<T>(pass, step, kv, block_table, kv_head, q, ldq, n_tok, group,
                                    start_pos, scale, out, ldo))
    return;
  const int32_t stride = (hd + Body::kStride - 1) / Body::kStride * Body::kStride;  // hd <= 1024
  // The default pass of one tile keeps its accumulators on the stack, as before passes existed.
  alignas(64) float tile_acc[Rows * 1024];
  thread_local ScratchBuffer scratch;
  float* acc = pass * stride <= Rows * 1024
                   ? tile_acc
                   : static_cast<float*>(scratch.get(sizeof(float) * size_t(pass) * stride));
  PassRows r;
  run_passes<Rows>(r, acc, stride, stride, q, ldq, out, ldo, n_tok, group, start_pos, hd, pass,
                   step, [&](auto nr, int32_t i0, int32_t b0, int32_t nb) {
                     Body::template tile<decltype(nr)::value, T>(r, i0, kv, block_table, kv_head,
                                                                 b0, nb, scale);
                   });
}

// A body's run(): its attention over the cache's element type.
template <int Rows, class Body>
void run_by_cache_type(const PagedKV& kv, const int32_t* block_table, int32_t kv_head,
                       const float* q, int64_t ldq, int32_t n_tok, int32_t group, int32_t start_pos,
                       float scale, float* out, int64_t ldo, const AttentionParams& params) {
  if (kv.dtype == DType::BF16)
    return attention_passes<Rows, Body, bf16_t>(kv, block_table, kv_head, q, ldq, n_tok, group,
                                                start_pos, scale, out, ldo, params);
  attention_passes<Rows, Body, float>(kv, block_table, kv_head, q, ldq, n_tok, group, start_pos,
                                      scale, out, ldo, params);
}

}  // namespace
}  // namespace sandwich::kernels
