#pragma once
// ggml's quantized block formats (the GGUF tensor types Q4_0 ... Q8_K), laid out exactly as ggml
// publishes them, and their scalar dequantization: the reference every quantized kernel and
// file tool is checked against. A block holds block_elems() consecutive weights of one row.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/dtype.h"

namespace sandwich::kernels {

enum class QType : uint8_t { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K };

constexpr int32_t kQK = 32;           // weights per block of the legacy types
constexpr int32_t kQKK = 256;         // weights per super-block of the K types
constexpr int32_t kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K/Q5_K

struct BlockQ4_0 {
  f16_t d;
  uint8_t qs[kQK / 2];  // weight j in the low nibble of qs[j], weight j + 16 in the high one
};
struct BlockQ4_1 {
  f16_t d, m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  f16_t d;
  uint8_t qh[4];  // fifth bits, little-endian u32: bit j for weight j
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  f16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  f16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_K {
  f16_t d, dmin;
  uint8_t scales[kKScaleBytes];  // 8 sub-blocks of 32: 6-bit scale and min each
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  f16_t d, dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];      // low 4 bits
  uint8_t qh[kQKK / 4];      // high 2 bits
  int8_t scales[kQKK / 16];  // 16 sub-blocks of 16
  f16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sums of each group of 16 qs
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

struct QTypeInfo {
  QType type;
  std::string_view name;  // ggml's name, lower case: "q4_k"
  uint32_t ggml_type;     // the GGUF tensor type id
  int32_t block_elems;
  int32_t block_bytes;
  double bits_per_weight() const { return 8.0 * block_bytes / block_elems; }
};

const QTypeInfo& qtype_info(QType t);
std::optional<QType> qtype_from_ggml(uint32_t ggml_type);
// Case-insensitive: "Q4_K", "q8_0".
std::optional<QType> qtype_from_name(std::string_view name);

// 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block.
void k_scale_min(int j, const uint8_t* scales, uint8_t* scale, uint8_t* min);

// Dequantizes n weights (a multiple of the type's block_elems) from consecutive blocks, in
// ggml's order of operations, so the floats are ggml's bit for bit.
void dequantize_ref(QType t, const void* blocks, float* out, int64_t n);

}  // namespace sandwich::kernels
