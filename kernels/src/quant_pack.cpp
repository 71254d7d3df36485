// Repacking ggml blocks into quantized panels (layout in quant_layout.h), reading rows back,
// and quantizing activations for the integer kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "quant_layout.h"

namespace sandwich::kernels {
namespace {

// One ggml block taken apart: the stored (unsigned) value of each weight and the block's
// scales, in the form the panel keeps them.
struct BlockParts {
  uint8_t q[kQKK];
  f16_t d = 0, m = 0;  // d and m (Q4_1/Q5_1) or dmin (Q4_K/Q5_K)
  float d32 = 0;       // Q8_K's d
  uint8_t sc[16] = {}, mn[8] = {};
};

// Where a legacy block (Q4_0, Q4_1, Q5_0, Q5_1) keeps its parts: the scale, a min (Q4_1/Q5_1)
// after it, then 4 bytes of high bits (Q5_*), then the low nibbles.
struct LegacyLayout {
  explicit LegacyLayout(QType t)
      : min(t == QType::Q4_1 || t == QType::Q5_1),
        five(t == QType::Q5_0 || t == QType::Q5_1),
        high(min ? 4 : 2),
        low(high + (five ? 4 : 0)) {}
  bool min, five;
  size_t high, low;  // byte offsets
};

// Q8_0 and Q8_K: one scale, and the int8 values stored offset by 128.
template <class Block, class Scale>
void split_q8(const uint8_t* src, Scale& d, uint8_t* q) {
  Block b;
  std::memcpy(&b, src, sizeof b);
  d = b.d;
  for (size_t j = 0; j < std::size(b.qs); ++j) q[j] = static_cast<uint8_t>(b.qs[j] + 128);
}

void split_block(QType t, const uint8_t* src, BlockParts& p) {
  switch (t) {
    case QType::Q4_0:
    case QType::Q4_1:
    case QType::Q5_0:
    case QType::Q5_1: {
      const LegacyLayout at(t);
      std::memcpy(&p.d, src, 2);
      if (at.min) std::memcpy(&p.m, src + 2, 2);
      uint32_t qh = 0;
      if (at.five) std::memcpy(&qh, src + at.high, 4);
      const uint8_t* qs = src + at.low;
      for (int j = 0; j < 16; ++j) {
        p.q[j] = static_cast<uint8_t>((qs[j] & 0xF) | (((qh >> j) & 1) << 4));
        p.q[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
      }
      break;
    }
    case QType::Q8_0:
      split_q8<BlockQ8_0>(src, p.d, p.q);
      break;
    case QType::Q4_K:
    case QType::Q5_K: {
      const bool five = t == QType::Q5_K;
      BlockQ5_K b5{};
      BlockQ4_K b4{};
      if (five) {
        std::memcpy(&b5, src, sizeof b5);
      } else {
        std::memcpy(&b4, src, sizeof b4);
      }
      const uint8_t* scales = five ? b5.scales : b4.scales;
      const uint8_t* qs = five ? b5.qs : b4.qs;
      p.d = five ? b5.d : b4.d;
      p.m = five ? b5.dmin : b4.dmin;
      for (int j = 0; j < 8; ++j) k_scale_min(j, scales, &p.sc[j], &p.mn[j]);
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
          if (five) {
            lo |= (b5.qh[l] >> (2 * c) & 1) << 4;
            hi |= (b5.qh[l] >> (2 * c + 1) & 1) << 4;
          }
          p.q[64 * c + l] = static_cast<uint8_t>(lo);
          p.q[64 * c + 32 + l] = static_cast<uint8_t>(hi);
        }
      break;
    }
    case QType::Q6_K: {
      BlockQ6_K b;
      std::memcpy(&b, src, sizeof b);
      p.d = b.d;
      std::memcpy(p.sc, b.scales, 16);
      for (int n0 = 0; n0 < 2; ++n0) {
        const uint8_t* ql = b.ql + 64 * n0;
        const uint8_t* qh = b.qh + 32 * n0;
        uint8_t* q = p.q + 128 * n0;
        for (int l = 0; l < 32; ++l) {
          q[l] = static_cast<uint8_t>((ql[l] & 0xF) | ((qh[l] & 3) << 4));
          q[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
          q[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
          q[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
      }
      break;
    }
    case QType::Q8_K:
      split_q8<BlockQ8_K>(src, p.d32, p.q);
      break;
  }
}

// The inverse of split_block: the ggml block, byte for byte (Q8_K's bsums recomputed).
void join_block(QType t, const BlockParts& p, uint8_t* dst) {
  switch (t) {
    case QType::Q8_0: {
      BlockQ8_0 b;
      b.d = p.d;
      for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(p.q[j] - 128);
      std::memcpy(dst, &b, sizeof b);
      break;
    }
    case QType::Q4_0:
    case QType::Q4_1:
    case QType::Q5_0:
    case QType::Q5_1: {
      const LegacyLayout at(t);
      std::memcpy(dst, &p.d, 2);
      if (at.min) std::memcpy(dst + 2, &p.m, 2);
      uint8_t* qs = dst + at.low;
      uint32_t qh = 0;
      for (int j = 0; j < 16; ++j) {
        qs[j] = static_cast<uint8_t>((p.q[j] & 0xF) | ((p.q[j + 16] & 0xF) << 4));
        qh |= static_cast<uint32_t>(p.q[j] >> 4 & 1) << j;
        qh |= static_cast<uint32_t>(p.q[j + 16] >> 4 & 1) << (j + 16);
      }
      if (at.five) std::memcpy(dst + at.high, &qh, 4);
      break;
    }
    case QType::Q4_K:
    case QType::Q5_K: {
      const bool five = t == QType::Q5_K;
      uint8_t scales[kKScaleBytes];
      for (int j = 0; j < 4; ++j) {
        scales[j] = static_cast<uint8_t>(p.sc[j] | (p.sc[j + 4] >> 4) << 6);
        scales[j + 4] = static_cast<uint8_t>(p.mn[j] | (p.mn[j + 4] >> 4) << 6);
        scales[j + 8] = static_cast<uint8_t>((p.sc[j + 4] & 0xF) | (p.mn[j + 4] & 0xF) << 4);
      }
      uint8_t qs[kQKK / 2], qh[kQKK / 8] = {};
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          const uint8_t lo = p.q[64 * c + l], hi = p.q[64 * c + 32 + l];
          qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | (hi & 0xF) << 4);
          qh[l] |= static_cast<uint8_t>((lo >> 4 & 1) << (2 * c) | (hi >> 4 & 1) << (2 * c + 1));
        }
      if (five) {
        BlockQ5_K b;
        b.d = p.d;
        b.dmin = p.m;
        std::memcpy(b.scales, scales, sizeof scales);
        std::memcpy(b.qh, qh, sizeof qh);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
      } else {
        BlockQ4_K b;
        b.d = p.d;
        b.dmin = p.m;
        std::memcpy(b.scales, scales, sizeof scales);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
      }
      break;
    }
    case QType::Q6_K: {
      BlockQ6_K b{};
      b.d = p.d;
      std::memcpy(b.scales, p.sc, 16);
      for (int n0 = 0; n0 < 2; ++n0) {
        uint8_t* ql = b.ql + 64 * n0;
        uint8_t* qh = b.qh + 32 * n0;
        const uint8_t* q = p.q + 128 * n0;
        for (int l = 0; l < 32; ++l) {
          ql[l] = static_cast<uint8_t>((q[l] & 0xF) | (q[l + 64] & 0xF) << 4);
          ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | (q[l + 96] & 0xF) << 4);
          qh[l] = static_cast<uint8_t>((q[l] >> 4) | (q[l + 32] >> 4) << 2 | (q[l + 64] >> 4) << 4 |
                                       (q[l + 96] >> 4) << 6);
        }
      }
      std::memcpy(dst, &b, sizeof b);
      break;
    }
    case QType::Q8_K: {
      BlockQ8_K b;
      b.d = p.d32;
      for (int j = 0; j < kQKK; ++j) b.qs[j] = static_cast<int8_t>(p.q[j] - 128);
      for (int g = 0; g < kQKK / 16; ++g) {
        int s = 0;
        for (int j = 0; j < 16; ++j) s += b.qs[16 * g + j];
        b.bsums[g] = static_cast<int16_t>(s);
      }
      std::memcpy(dst, &b, sizeof b);
      break;
    }
  }
}

// Byte of row r holding element e's low bits, and the nibble (0 low, 1 high) or -1.
size_t low_byte(const QLayout& l, int r, int e, int* nibble) {
  const int g = e % 32 / 4, i = e % 4;
  const size_t chunk = static_cast<size_t>(chunk_offset(l, e / 32));
  if (l.low_bits == 8) {
    *nibble = -1;
    return chunk + static_cast<size_t>(g) * 64 + 4 * r + i;
  }
  *nibble = g & 1;
  return chunk + static_cast<size_t>(g / 2) * 64 + 4 * r + i;
}
// Byte of row r holding element e's high bits, and their shift.
size_t high_byte(const QLayout& l, int r, int e, int* shift) {
  const int span = l.high_bits == 1 ? 32 : 16;
  *shift = l.high_bits * ((e % span) / 4);
  return static_cast<size_t>(chunk_offset(l, e / 32) + l.chunk_qs) +
         static_cast<size_t>(e % 32 / span) * 64 + 4 * r + e % 4;
}

// Writes row r's bytes of a panel-block whole (each byte holds one row's values), chunk by
// chunk: loading runs this for every weight, so it follows the layout directly.
void put_block(QType t, const QLayout& l, const BlockParts& p, int r, uint8_t* pb) {
  uint8_t* meta = pb;
  for (int c = 0; c < l.block_elems / 32; ++c) {
    uint8_t* chunk = pb + chunk_offset(l, c) + 4 * r;
    const uint8_t* q = p.q + 32 * c;
    for (int i = 0; i < 4; ++i) {
      if (l.low_bits == 8) {
        for (int g = 0; g < 8; ++g) chunk[64 * g + i] = q[4 * g + i];
      } else {
        for (int pr = 0; pr < 4; ++pr)
          chunk[64 * pr + i] =
              static_cast<uint8_t>((q[8 * pr + i] & 0xF) | (q[8 * pr + 4 + i] & 0xF) << 4);
      }
      if (l.high_bits == 1) {
        uint8_t h = 0;
        for (int g = 0; g < 8; ++g) h = static_cast<uint8_t>(h | (q[4 * g + i] >> 4 & 1) << g);
        chunk[l.chunk_qs + i] = h;
      } else if (l.high_bits == 2) {
        for (int half = 0; half < 2; ++half) {
          uint8_t h = 0;
          for (int g = 0; g < 4; ++g)
            h = static_cast<uint8_t>(h | (q[16 * half + 4 * g + i] >> 4 & 3) << 2 * g);
          chunk[l.chunk_qs + 64 * half + i] = h;
        }
      }
    }
  }
  if (t == QType::Q8_K) {
    std::memcpy(meta + 4 * r, &p.d32, 4);
    return;
  }
  std::memcpy(meta + 2 * r, &p.d, 2);
  if (l.has_min) std::memcpy(meta + 32 + 2 * r, &p.m, 2);
  if (t == QType::Q4_K || t == QType::Q5_K)
    for (int j = 0; j < 8; ++j) {
      meta[64 + 16 * j + r] = p.sc[j];
      meta[64 + 128 + 16 * j + r] = p.mn[j];
    }
  if (t == QType::Q6_K)
    for (int j = 0; j < 16; ++j) meta[32 + 16 * j + r] = p.sc[j];
}

void get_block(QType t, const QLayout& l, const uint8_t* pb, int r, BlockParts& p) {
  const uint8_t* meta = pb;
  for (int e = 0; e < l.block_elems; ++e) p.q[e] = static_cast<uint8_t>(stored_value(l, pb, r, e));
  if (t == QType::Q8_K) {
    std::memcpy(&p.d32, meta + 4 * r, 4);
    return;
  }
  std::memcpy(&p.d, meta + 2 * r, 2);
  if (l.has_min) std::memcpy(&p.m, meta + 32 + 2 * r, 2);
  if (t == QType::Q4_K || t == QType::Q5_K)
    for (int j = 0; j < 8; ++j) {
      p.sc[j] = meta[64 + 16 * j + r];
      p.mn[j] = meta[64 + 128 + 16 * j + r];
    }
  if (t == QType::Q6_K)
    for (int j = 0; j < 16; ++j) p.sc[j] = meta[32 + 16 * j + r];
}

const uint8_t* panel_block(const PackedWeight& w, int64_t p, int64_t b) {
  const QLayout l = qlayout(*w.qtype);
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes() +
         static_cast<size_t>(b) * l.bytes;
}

// Packs panels [p0, p1); source row i (after row_map) is at src + (i - row_base) * stride.
void pack_quant_panels(const PackedWeight& w, const uint8_t* src, int64_t stride,
                       const int64_t* row_map, int64_t row_base, int64_t p0, int64_t p1) {
  const QType t = *w.qtype;
  const QLayout l = qlayout(t);
  const QTypeInfo& info = qtype_info(t);
  const int64_t nb = w.k / l.block_elems;
  BlockParts parts;
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* panel = static_cast<uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
    std::memset(panel, 0, w.panel_bytes());
    for (int r = 0; r < kQRows; ++r) {
      const int64_t row = p * kQRows + r;
      if (row >= w.n) break;  // padding rows stay zero: zero scales, zero outputs
      const uint8_t* s = src + ((row_map ? row_map[row] : row) - row_base) * stride;
      for (int64_t b = 0; b < nb; ++b) {
        split_block(t, s + b * info.block_bytes, parts);
        put_block(t, l, parts, r, panel + b * l.bytes);
      }
    }
  }
}

void check_quant(const PackedWeight& w, const char* fn) {
  if (!w.qtype) throw std::invalid_argument(std::string(fn) + ": the weight is not quantized");
  if (!w.data) throw std::invalid_argument(std::string(fn) + ": the weight has no buffer");
}

}  // namespace

int stored_value(const QLayout& l, const uint8_t* pb, int r, int e) {
  int nib;
  const uint8_t b = pb[low_byte(l, r, e, &nib)];
  int v = nib < 0 ? b : nib ? b >> 4 : b & 0xF;
  if (l.high_bits) {
    int sh;
    const uint8_t h = pb[high_byte(l, r, e, &sh)];
    v |= ((h >> sh) & ((1 << l.high_bits) - 1)) << 4;
  }
  return v;
}

void unit_scale(QType t, const uint8_t* pb, int r, int unit, float* s, float* c) {
  const QLayout l = qlayout(t);
  const uint8_t* meta = pb;
  *c = 0.0f;
  if (t == QType::Q8_K) {
    std::memcpy(s, meta + 4 * r, 4);
    return;
  }
  f16_t d, m;
  std::memcpy(&d, meta + 2 * r, 2);
  std::memcpy(&m, meta + 32 + 2 * r, 2);
  const float df = f16_to_f32(d);
  if (t == QType::Q4_K || t == QType::Q5_K) {
    *s = df * static_cast<float>(meta[64 + 16 * unit + r]);
    *c = -(f16_to_f32(m) * static_cast<float>(meta[64 + 128 + 16 * unit + r]));
  } else if (t == QType::Q6_K) {
    *s = df * static_cast<float>(static_cast<int8_t>(meta[32 + 16 * unit + r]));
  } else {
    *s = df;
    if (l.has_min) *c = f16_to_f32(m);
  }
}

PackedWeight plan_packed_weight_quant(int64_t n, int64_t k, QType t) {
  const QTypeInfo& info = qtype_info(t);
  if (n <= 0 || k <= 0) throw std::invalid_argument("weight must have a positive shape");
  if (k % info.block_elems != 0)
    throw std::invalid_argument("a " + std::string(info.name) + " weight needs k (" +
                                std::to_string(k) + ") to be a multiple of its block size " +
                                std::to_string(info.block_elems));
  PackedWeight w;
  w.dtype = DType::BF16;
  w.qtype = t;
  w.n = n;
  w.k = k;
  w.panel = kQRows;
  w.bytes = static_cast<size_t>(w.panels()) * w.panel_bytes();
  return w;
}

size_t PackedWeight::quant_panel_bytes() const {
  const QLayout l = qlayout(*qtype);
  // Rounded to cache lines, so every panel starts on one.
  return (static_cast<size_t>(k / l.block_elems) * l.bytes + 63) / 64 * 64;
}

void pack_weight_quant(const PackedWeight& w, const void* blocks, int64_t src_row_bytes,
                       const int64_t* row_map, ThreadTeam* team) {
  check_quant(w, "pack_weight_quant");
  const auto* src = static_cast<const uint8_t*>(blocks);
  if (team && team->size() > 1)
    team->parallel_for(w.panels(), [&](int64_t b, int64_t e, int) {
      pack_quant_panels(w, src, src_row_bytes, row_map, 0, b, e);
    });
  else
    pack_quant_panels(w, src, src_row_bytes, row_map, 0, 0, w.panels());
}

void pack_weight_quant_rows(const PackedWeight& w, const void* blocks, int64_t src_row_bytes,
                            int64_t row0, int64_t row1, ThreadTeam* team) {
  check_quant(w, "pack_weight_quant_rows");
  if (row0 % w.panel != 0 || (row1 % w.panel != 0 && row1 != w.n) || row0 < 0 || row1 > w.n ||
      row0 > row1)
    throw std::invalid_argument("pack_weight_quant_rows: rows must be whole panels of " +
                                std::to_string(w.panel));
  const auto* src = static_cast<const uint8_t*>(blocks);
  const int64_t p0 = row0 / w.panel, p1 = (row1 + w.panel - 1) / w.panel;
  if (team && team->size() > 1)
    team->parallel_for(p1 - p0, [&](int64_t b, int64_t e, int) {
      pack_quant_panels(w, src, src_row_bytes, nullptr, row0, p0 + b, p0 + e);
    });
  else
    pack_quant_panels(w, src, src_row_bytes, nullptr, row0, p0, p1);
}

void unpack_row_blocks(const PackedWeight& w, int64_t r, void* blocks) {
  check_quant(w, "unpack_row_blocks");
  const QType t = *w.qtype;
  const QTypeInfo& info = qtype_info(t);
  BlockParts parts;
  auto* dst = static_cast<uint8_t*>(blocks);
  for (int64_t b = 0; b < w.k / info.block_elems; ++b) {
    get_block(t, qlayout(t), panel_block(w, r / kQRows, b), static_cast<int>(r % kQRows), parts);
    join_block(t, parts, dst + b * info.block_bytes);
  }
}

void unpack_row_quant(const PackedWeight& w, int64_t r, float* out) {
  const QTypeInfo& info = qtype_info(*w.qtype);
  std::vector<uint8_t> row(static_cast<size_t>(w.k / info.block_elems * info.block_bytes));
  unpack_row_blocks(w, r, row.data());
  dequantize_ref(*w.qtype, row.data(), out, w.k);
}

}  // namespace sandwich::kernels
