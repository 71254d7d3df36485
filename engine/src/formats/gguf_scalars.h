#pragma once
// The GGUF scalar types and how a file stores each: the one list the reader, the writer and
// Value share, so they cannot disagree on a type's width or on whether it is an integer.
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "engine/formats/gguf.h"

namespace sandwich::engine::gguf::detail {

// The integer view of a float value; 0 where it has none (NaN, infinite or beyond int64, whose
// conversion would be undefined).
inline int64_t integer_view(double v) {
  return v > -9.2e18 && v < 9.2e18 ? static_cast<int64_t>(v) : 0;
}

template <ValueType T, class Stored>
struct Scalar {
  static constexpr ValueType type = T;
  using stored = Stored;  // BOOL: one byte, 0 or 1
  static constexpr bool is_bool = T == ValueType::BOOL;
  static constexpr bool is_float = std::is_floating_point_v<Stored>;
};

using Scalars = std::tuple<Scalar<ValueType::U8, uint8_t>, Scalar<ValueType::I8, int8_t>,
                           Scalar<ValueType::U16, uint16_t>, Scalar<ValueType::I16, int16_t>,
                           Scalar<ValueType::U32, uint32_t>, Scalar<ValueType::I32, int32_t>,
                           Scalar<ValueType::U64, uint64_t>, Scalar<ValueType::I64, int64_t>,
                           Scalar<ValueType::BOOL, uint8_t>, Scalar<ValueType::F32, float>,
                           Scalar<ValueType::F64, double>>;

// Calls f(Scalar<t, ...>{}) and returns true when t is a scalar type; false (and f is not
// called) for STRING, ARRAY and unknown types.
template <class F>
bool visit_scalar(ValueType t, F&& f) {
  return std::apply([&](auto... s) { return ((s.type == t && (f(s), true)) || ...); }, Scalars{});
}

}  // namespace sandwich::engine::gguf::detail
