#include "kernels/quant_blocks.h"

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sandwich::kernels {
namespace {

constexpr QTypeInfo kInfos[] = {
    {QType::Q4_0, "q4_0", 2, kQK, sizeof(BlockQ4_0)},
    {QType::Q4_1, "q4_1", 3, kQK, sizeof(BlockQ4_1)},
    {QType::Q5_0, "q5_0", 6, kQK, sizeof(BlockQ5_0)},
    {QType::Q5_1, "q5_1", 7, kQK, sizeof(BlockQ5_1)},
    {QType::Q8_0, "q8_0", 8, kQK, sizeof(BlockQ8_0)},
    {QType::Q4_K, "q4_k", 12, kQKK, sizeof(BlockQ4_K)},
    {QType::Q5_K, "q5_k", 13, kQKK, sizeof(BlockQ5_K)},
    {QType::Q6_K, "q6_k", 14, kQKK, sizeof(BlockQ6_K)},
    {QType::Q8_K, "q8_k", 15, kQKK, sizeof(BlockQ8_K)},
};

template <typename Block>
const Block* blocks_of(const void* p) {
  return static_cast<const Block*>(p);
}

}  // namespace

const QTypeInfo& qtype_info(QType t) {
  for (const auto& i : kInfos)
    if (i.type == t) return i;
  throw std::invalid_argument("qtype_info: unknown quantized type");
}

std::optional<QType> qtype_from_ggml(uint32_t ggml_type) {
  for (const auto& i : kInfos)
    if (i.ggml_type == ggml_type) return i.type;
  return std::nullopt;
}

std::optional<QType> qtype_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& i : kInfos)
    if (i.name == lower) return i.type;
  return std::nullopt;
}

void k_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

namespace {

// One block of each type into its block_elems floats, as ggml's dequantize_row_* does.
void block_q4_0(const BlockQ4_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
    y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void block_q4_1(const BlockQ4_1& b, float* y) {
  const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
    y[j + kQK / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

void block_q5_0(const BlockQ5_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK / 2; ++j) {
    const uint8_t h0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
    const uint8_t h1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>(((b.qs[j] & 0x0F) | h0) - 16) * d;
    y[j + kQK / 2] = static_cast<float>(((b.qs[j] >> 4) | h1) - 16) * d;
  }
}

void block_q5_1(const BlockQ5_1& b, float* y) {
  const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK / 2; ++j) {
    const uint8_t h0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
    const uint8_t h1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>((b.qs[j] & 0x0F) | h0) * d + m;
    y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) | h1) * d + m;
  }
}

void block_q8_0(const BlockQ8_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void block_q4_k(const BlockQ4_K& b, float* y) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  const uint8_t* q = b.qs;
  for (int j = 0, is = 0; j < kQKK; j += 64, is += 2, q += 32) {
    uint8_t sc, m;
    k_scale_min(is, b.scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    k_scale_min(is + 1, b.scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

void block_q5_k(const BlockQ5_K& b, float* y) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  const uint8_t* ql = b.qs;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kQKK; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
    uint8_t sc, m;
    k_scale_min(is, b.scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    k_scale_min(is + 1, b.scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
  }
}

void block_q6_k(const BlockQ6_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const uint8_t* ql = b.ql;
  const uint8_t* qh = b.qh;
  const int8_t* sc = b.scales;
  for (int n0 = 0; n0 < kQKK; n0 += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * static_cast<float>(q1);
      y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
      y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
      y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
    }
  }
}

void block_q8_k(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < kQKK; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

// nb blocks of `Block` at src, each into `elems` floats.
template <class Block>
void each_block(const void* src, float* y, int64_t nb, int elems,
                void (*block)(const Block&, float*)) {
  for (int64_t i = 0; i < nb; ++i) block(blocks_of<Block>(src)[i], y + i * elems);
}

}  // namespace

void dequantize_ref(QType t, const void* src, float* y, int64_t n) {
  const QTypeInfo& info = qtype_info(t);
  if (n % info.block_elems != 0)
    throw std::invalid_argument("dequantize_ref: " + std::to_string(n) + " weights is not a " +
                                "whole number of " + std::string(info.name) + " blocks");
  const int64_t nb = n / info.block_elems;
  switch (t) {
    case QType::Q4_0:
      return each_block<BlockQ4_0>(src, y, nb, kQK, block_q4_0);
    case QType::Q4_1:
      return each_block<BlockQ4_1>(src, y, nb, kQK, block_q4_1);
    case QType::Q5_0:
      return each_block<BlockQ5_0>(src, y, nb, kQK, block_q5_0);
    case QType::Q5_1:
      return each_block<BlockQ5_1>(src, y, nb, kQK, block_q5_1);
    case QType::Q8_0:
      return each_block<BlockQ8_0>(src, y, nb, kQK, block_q8_0);
    case QType::Q4_K:
      return each_block<BlockQ4_K>(src, y, nb, kQKK, block_q4_k);
    case QType::Q5_K:
      return each_block<BlockQ5_K>(src, y, nb, kQKK, block_q5_k);
    case QType::Q6_K:
      return each_block<BlockQ6_K>(src, y, nb, kQKK, block_q6_k);
    case QType::Q8_K:
      return each_block<BlockQ8_K>(src, y, nb, kQKK, block_q8_k);
  }
}

}  // namespace sandwich::kernels
