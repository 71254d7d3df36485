#pragma once
// Uniform floats in [-1, 1) from splitmix64: fast enough for matrices of a hundred million
// elements, and the same values for the same seed everywhere (benchmarks and the tuner's
// profiler fill weights and activations with it).
#include <cstddef>
#include <cstdint>

namespace sandwich {

inline void fill_uniform(float* v, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v[i] = static_cast<float>((z ^ (z >> 31)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
}

}  // namespace sandwich
