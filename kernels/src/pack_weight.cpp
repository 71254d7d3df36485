// Packing weights into panels (layout in gemm.h) and reading them back.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "quant_layout.h"

namespace sandwich::kernels {

PackedWeight plan_packed_weight(int64_t n, int64_t k, DType storage) {
  if (n <= 0 || k <= 0) throw std::invalid_argument("weight must have a positive shape");
  if (storage == DType::F16) throw std::invalid_argument("weights are stored as f32 or bf16");
  PackedWeight w;
  w.dtype = storage;
  w.n = n;
  w.k = k;
  w.panel = kPanel;
  w.bytes = static_cast<size_t>(w.panels()) * w.panel_bytes();
  return w;
}

namespace {

// K elements per block while packing: the destination block (64 columns x kBlock) stays in L1
// while the 64 source rows are scattered into it.
constexpr int64_t kPackBlock = 128;

// Packs panels [p0, p1); row r of the source is at src + (r - row_base) * src_stride elements.
void pack_panels(const PackedWeight& w, const uint8_t* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map, int64_t row_base, int64_t p0, int64_t p1) {
  const size_t es = dtype_size(src_type);
  const int64_t kp = w.k_padded();
  // One block of a source row in the destination type, zero-padded past k.
  float f32_row[kPackBlock];
  bf16_t bf16_row[kPackBlock];
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* panel = static_cast<uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
    for (int64_t k0 = 0; k0 < kp; k0 += kPackBlock) {
      const int64_t kb = std::min(kPackBlock, kp - k0);
      for (int c = 0; c < kPanel; ++c) {
        const int64_t r = p * kPanel + c;
        const uint8_t* s = nullptr;
        if (r < w.n)
          s = src + static_cast<size_t>(((row_map ? row_map[r] : r) - row_base) * src_stride) * es;
        for (int64_t j = 0; j < kb; ++j) {
          const int64_t col = k0 + j;
          const float v =
              s && col < w.k ? load_as_f32(s, static_cast<size_t>(col), src_type) : 0.0f;
          if (w.dtype == DType::BF16)
            bf16_row[j] = src_type == DType::BF16 && s && col < w.k
                              ? reinterpret_cast<const bf16_t*>(s)[col]
                              : f32_to_bf16(v);
          else
            f32_row[j] = v;
        }
        if (w.dtype == DType::BF16) {
          auto* d = reinterpret_cast<bf16_t*>(panel) + k0 * kPanel + 2 * c;
          for (int64_t j = 0; j < kb; j += 2) {
            d[j * kPanel] = bf16_row[j];
            d[j * kPanel + 1] = bf16_row[j + 1];
          }
        } else {
          auto* d = reinterpret_cast<float*>(panel) + k0 * kPanel + c;
          for (int64_t j = 0; j < kb; ++j) d[j * kPanel] = f32_row[j];
        }
      }
    }
  }
}

void pack_range(const PackedWeight& w, const uint8_t* src, DType src_type, int64_t src_stride,
                const int64_t* row_map, int64_t row_base, int64_t p0, int64_t p1,
                ThreadTeam* team) {
  if (!w.data) throw std::invalid_argument("pack_weight: the weight has no buffer");
  if (w.qtype)
    throw std::invalid_argument("pack_weight: a quantized weight is packed by pack_weight_quant");
  if (src_type != DType::F32 && src_type != DType::BF16 && src_type != DType::F16)
    throw std::invalid_argument("pack_weight: unsupported source type");
  if (team && team->size() > 1) {
    team->parallel_for(p1 - p0, [&](int64_t b, int64_t e, int) {
      pack_panels(w, src, src_type, src_stride, row_map, row_base, p0 + b, p0 + e);
    });
  } else {
    pack_panels(w, src, src_type, src_stride, row_map, row_base, p0, p1);
  }
}

}  // namespace

void pack_weight(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map, ThreadTeam* team) {
  pack_range(w, static_cast<const uint8_t*>(src), src_type, src_stride, row_map, 0, 0, w.panels(),
             team);
}

void pack_weight_rows(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                      int64_t row0, int64_t row1, ThreadTeam* team) {
  if (row0 % w.panel != 0 || (row1 % w.panel != 0 && row1 != w.n) || row0 < 0 || row1 > w.n ||
      row0 > row1)
    throw std::invalid_argument("pack_weight_rows: rows must be whole panels of " +
                                std::to_string(w.panel));
  pack_range(w, static_cast<const uint8_t*>(src), src_type, src_stride, nullptr, row0,
             row0 / w.panel, (row1 + w.panel - 1) / w.panel, team);
}

void unpack_row(const PackedWeight& w, int64_t r, float* out) {
  if (w.qtype) return unpack_row_quant(w, r, out);
  const int64_t p = r / w.panel, c = r % w.panel;
  const uint8_t* panel =
      static_cast<const uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
  if (w.dtype == DType::BF16) {
    const auto* d = reinterpret_cast<const bf16_t*>(panel);
    for (int64_t j = 0; j < w.k; ++j)
      out[j] = bf16_to_f32(d[(j / 2) * 2 * w.panel + 2 * c + (j & 1)]);
  } else {
    const auto* d = reinterpret_cast<const float*>(panel);
    for (int64_t j = 0; j < w.k; ++j) out[j] = d[j * w.panel + c];
  }
}

}  // namespace sandwich::kernels
