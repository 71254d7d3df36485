#pragma once
// Random valid ggml blocks for the quantized-kernel tests: random quants, finite f16 scales,
// Q8_K's bsums consistent with its quants.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/quant_blocks.h"

namespace sandwich::test {

// rows x (k / block_elems) blocks of type t, rows back to back.
inline std::vector<uint8_t> random_quant_blocks(kernels::QType t, int64_t rows, int64_t k,
                                                uint32_t seed) {
  using namespace kernels;
  const QTypeInfo& info = qtype_info(t);
  const int64_t nb = rows * (k / info.block_elems);
  std::vector<uint8_t> out(static_cast<size_t>(nb * info.block_bytes));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  auto f16 = [&](bool positive) {
    const float v = scale(rng);
    return f32_to_f16(positive || byte(rng) < 128 ? v : -v);
  };
  for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t* b = out.data() + i * info.block_bytes;
    auto put16 = [&](size_t off, f16_t v) { std::memcpy(b + off, &v, 2); };
    switch (t) {
      case QType::Q4_0:
      case QType::Q5_0:
      case QType::Q8_0:
        put16(0, f16(false));
        break;
      case QType::Q4_1:
      case QType::Q5_1:
        put16(0, f16(true));
        put16(2, f16(false));
        break;
      case QType::Q4_K:
      case QType::Q5_K:
        put16(0, f16(true));
        put16(2, f16(true));
        break;
      case QType::Q6_K:
        put16(offsetof(BlockQ6_K, d), f16(false));
        break;
      case QType::Q8_K: {
        BlockQ8_K q;
        std::memcpy(&q, b, sizeof q);
        q.d = scale(rng);
        for (int g = 0; g < kQKK / 16; ++g) {
          int s = 0;
          for (int j = 0; j < 16; ++j) {
            if (q.qs[16 * g + j] == -128) q.qs[16 * g + j] = -127;  // ggml's range
            s += q.qs[16 * g + j];
          }
          q.bsums[g] = static_cast<int16_t>(s);
        }
        std::memcpy(b, &q, sizeof q);
        break;
      }
    }
  }
  return out;
}

// A packed quantized weight with its own 64-byte-aligned buffer.
struct QuantWeight {
  std::vector<uint8_t> raw;
  kernels::PackedWeight pw;
};

inline QuantWeight pack_quant(kernels::QType t, int64_t n, int64_t k,
                              const std::vector<uint8_t>& blocks) {
  QuantWeight q;
  q.pw = kernels::plan_packed_weight_quant(n, k, t);
  q.raw.assign(q.pw.bytes + 64, 0xcd);
  q.pw.data = q.raw.data() + (64 - reinterpret_cast<uintptr_t>(q.raw.data()) % 64) % 64;
  const int64_t row_bytes =
      k / kernels::qtype_info(t).block_elems * kernels::qtype_info(t).block_bytes;
  kernels::pack_weight_quant(q.pw, blocks.data(), row_bytes);
  return q;
}

}  // namespace sandwich::test
