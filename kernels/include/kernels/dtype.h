#pragma once
// Element types of weights and activations, and exact scalar conversions between them.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/enum_names.h"

namespace sandwich::kernels {

enum class DType : uint8_t { F32, F16, BF16 };

constexpr size_t dtype_size(DType t) {
  return t == DType::F32 ? 4 : 2;
}
inline constexpr EnumName<DType> kDTypeNames[] = {
    {DType::F32, "f32"}, {DType::F16, "f16"}, {DType::BF16, "bf16"}};
constexpr std::string_view dtype_name(DType t) {
  return name_of(t, kDTypeNames);
}

using bf16_t = uint16_t;
using f16_t = uint16_t;

inline float bf16_to_f32(bf16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// Round to nearest even, NaN kept quiet (the same rounding as vcvtneps2bf16).
inline bf16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_t>(u >> 16);
}

inline float f16_to_f32(f16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest even with overflow to infinity.
inline f16_t f32_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return static_cast<f16_t>(sign | 0x7e00u);
  if (au >= 0x477ff000u) return static_cast<f16_t>(sign | 0x7c00u);  // rounds to >= 65520
  if (au < 0x38800000u) {                                            // subnormal or zero in f16
    const float a = std::bit_cast<float>(au);
    // 2^-24 is the f16 subnormal step; adding 0.5 (in units of it) via float rounding is exact RNE.
    const float scaled = a * 16777216.0f;  // a / 2^-24
    uint32_t m = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return static_cast<f16_t>(sign | m);
  }
  uint32_t v = au - ((127 - 15) << 23);
  v += 0xfffu + ((v >> 13) & 1u);
  return static_cast<f16_t>(sign | (v >> 13));
}

// Reads element i of a row stored as t, widened to f32.
// Rows of a mapped file need not be aligned (a safetensors header may be any length), so the
// element is copied out; memcpy compiles to the same single load.
inline float load_as_f32(const void* row, size_t i, DType t) {
  auto load = [&]<typename T>(T*) {
    T v;
    std::memcpy(&v, static_cast<const char*>(row) + i * sizeof(T), sizeof(T));
    return v;
  };
  switch (t) {
    case DType::F32:
      return load(static_cast<float*>(nullptr));
    case DType::F16:
      return f16_to_f32(load(static_cast<f16_t*>(nullptr)));
    case DType::BF16:
      return bf16_to_f32(load(static_cast<bf16_t*>(nullptr)));
  }
  return 0.0f;
}

inline void store_from_f32(void* row, size_t i, DType t, float v) {
  switch (t) {
    case DType::F32:
      static_cast<float*>(row)[i] = v;
      break;
    case DType::F16:
      static_cast<f16_t*>(row)[i] = f32_to_f16(v);
      break;
    case DType::BF16:
      static_cast<bf16_t*>(row)[i] = f32_to_bf16(v);
      break;
  }
}

}  // namespace sandwich::kernels
