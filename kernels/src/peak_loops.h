#pragma once
// The loops behind peak_probes.h, written once over the vector type. Include this inside an
// ISA's `#pragma GCC target` region: each instantiation then compiles for that ISA.
#include <cstddef>
#include <cstdint>

namespace sandwich::kernels::peak {

// Lane l of v (v itself for a scalar type).
template <class V>
__attribute__((always_inline)) inline auto lane(const V& v, size_t l) {
  if constexpr (sizeof(V) <= 8)
    return v;
  else
    return v[l];
}

// Chains accumulators of V: chain c starts at c * 1e-3f, each round x = fma(x, 0.999999f, 1e-7f).
// Returns lane 0 of the chains' sum.
template <int Chains, class V, class Fma>
__attribute__((always_inline)) inline float fma_chains(int64_t iters, Fma fma) {
  V acc[Chains];
  for (int i = 0; i < Chains; ++i) acc[i] = V{} + static_cast<float>(i) * 1e-3f;
  const V a = V{} + 0.999999f, b = V{} + 1e-7f;
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < Chains; ++i) acc[i] = fma(acc[i], a, b);
  V s = acc[0];
  for (int i = 1; i < Chains; ++i) s = s + acc[i];
  return lane(s, 0);
}

// XOR of the 64-bit words of [p, p + bytes), V a vector (or scalar) of 64-bit lanes that may
// alias anything: 256 bytes a step, spread over four accumulators.
template <class V>
__attribute__((always_inline)) inline uint64_t xor_words(const void* p, size_t bytes) {
  constexpr int kPerStep = 256 / sizeof(V);
  V acc[4] = {};
  const auto* c = static_cast<const char*>(p);
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
#pragma GCC unroll 32
    for (int j = 0; j < kPerStep; ++j)
      acc[j % 4] ^= *reinterpret_cast<const V*>(c + i + j * sizeof(V));
  }
  const V s = (acc[0] ^ acc[1]) ^ (acc[2] ^ acc[3]);
  uint64_t r = 0;
  for (size_t l = 0; l < sizeof(V) / 8; ++l) r ^= static_cast<uint64_t>(lane(s, l));
  return r;
}

}  // namespace sandwich::kernels::peak
