// Packing weights into panels (layout in gemm.h) and reading them back.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"

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

// Packs panels [p0, p1); src points at row 64 * p0.
void pack_panels(const PackedWeight& w, const uint8_t* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map, int64_t row_base, int64_t p0, int64_t p1) {
  const size_t es = dtype_size(src_type);
  const int64_t kp = w.k_padded();
  // One source row in the destination type (zero-padded), then scattered into the panel.
  std::vector<uint8_t> row(static_cast<size_t>(kp) * dtype_size(w.dtype), 0);
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* panel = static_cast<uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
    for (int c = 0; c < kPanel; ++c) {
      const int64_t r = p * kPanel + c;
      std::fill(row.begin(), row.end(), 0);
      if (r < w.n) {
        const int64_t sr = row_map ? row_map[r] : r;
        const uint8_t* s = src + static_cast<size_t>((sr - row_base) * src_stride) * es;
        if (src_type == w.dtype) {
          std::memcpy(row.data(), s, static_cast<size_t>(w.k) * es);
        } else {
          for (int64_t j = 0; j < w.k; ++j)
            store_from_f32(row.data(), static_cast<size_t>(j), w.dtype, load_as_f32(s, static_cast<size_t>(j), src_type));
        }
      }
      if (w.dtype == DType::BF16) {
        const auto* in = reinterpret_cast<const bf16_t*>(row.data());
        auto* d = reinterpret_cast<bf16_t*>(panel) + 2 * c;
        for (int64_t j = 0; j < kp; j += 2) {
          d[j * kPanel] = in[j];
          d[j * kPanel + 1] = in[j + 1];
        }
      } else {
        const auto* in = reinterpret_cast<const float*>(row.data());
        auto* d = reinterpret_cast<float*>(panel) + c;
        for (int64_t j = 0; j < kp; ++j) d[j * kPanel] = in[j];
      }
    }
  }
}

void pack_range(const PackedWeight& w, const uint8_t* src, DType src_type, int64_t src_stride, const int64_t* row_map,
                int64_t row_base, int64_t p0, int64_t p1, ThreadTeam* team) {
  if (!w.data) throw std::invalid_argument("pack_weight: the weight has no buffer");
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

void pack_weight(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride, const int64_t* row_map,
                 ThreadTeam* team) {
  pack_range(w, static_cast<const uint8_t*>(src), src_type, src_stride, row_map, 0, 0, w.panels(), team);
}

void pack_weight_rows(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride, int64_t row0,
                      int64_t row1, ThreadTeam* team) {
  if (row0 % w.panel != 0 || (row1 % w.panel != 0 && row1 != w.n) || row0 < 0 || row1 > w.n || row0 > row1)
    throw std::invalid_argument("pack_weight_rows: rows must be whole panels of " + std::to_string(w.panel));
  pack_range(w, static_cast<const uint8_t*>(src), src_type, src_stride, nullptr, row0, row0 / w.panel,
             (row1 + w.panel - 1) / w.panel, team);
}

void unpack_row(const PackedWeight& w, int64_t r, float* out) {
  const int64_t p = r / w.panel, c = r % w.panel;
  const uint8_t* panel = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(p) * w.panel_bytes();
  if (w.dtype == DType::BF16) {
    const auto* d = reinterpret_cast<const bf16_t*>(panel);
    for (int64_t j = 0; j < w.k; ++j) out[j] = bf16_to_f32(d[(j / 2) * 2 * w.panel + 2 * c + (j & 1)]);
  } else {
    const auto* d = reinterpret_cast<const float*>(panel);
    for (int64_t j = 0; j < w.k; ++j) out[j] = d[j * w.panel + c];
  }
}

void gemm_ref(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t m, int64_t n, int64_t k, float* y,
              int64_t ldy) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += static_cast<double>(x[i * ldx + t]) * w[j * ldw + t];
      y[i * ldy + j] = static_cast<float>(s);
    }
}

}  // namespace sandwich::kernels
