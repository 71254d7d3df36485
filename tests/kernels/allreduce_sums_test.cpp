// Every vector body of the all-reduce's sums this CPU runs, called through its table, against
// the scalar reference bit for bit, whatever SANDWICH_ISA picks for the all-reduce itself: rank
// counts, lengths around the vector widths, sums in place, and NaN, Inf and rounding ties.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "allreduce_sum.h"

namespace sandwich::kernels {
namespace {

const AllReduceSums* const kVectorSums[] = {&kAllReduceAvx512Bf16, &kAllReduceAvx512,
                                            &kAllReduceAvx2};
constexpr size_t kLengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4099};
constexpr int kRanks[] = {1, 2, 3, 4, 7};

// Random values with specials sprinkled in (no denormals: vcvtneps2bf16 flushes them to zero,
// where f32_to_bf16 keeps them).
std::vector<float> values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> v(n);
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            0.0f,
                            -0.0f,
                            3.0e38f,
                            1e-30f,
                            1.0f,
                            0.00390625f};  // the last two: ties
  for (size_t i = 0; i < n; ++i)
    v[i] = rng() % 41 == 0 ? specials[rng() % std::size(specials)] : nd(rng);
  return v;
}

template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>;

template <class T>
void check(const AllReduceSums& s, void (*body)(const T* const*, int, size_t, T*),
           void (*ref)(const T* const*, int, size_t, T*)) {
  for (int ranks : kRanks)
    for (size_t n : kLengths) {
      std::vector<std::vector<T>> src(ranks);
      for (int q = 0; q < ranks; ++q) {
        const std::vector<float> f = values(n, 100 * ranks + q + static_cast<uint32_t>(n));
        for (float x : f) {
          if constexpr (sizeof(T) == 4)
            src[q].push_back(x);
          else
            src[q].push_back(f32_to_bf16(x));
        }
      }
      std::vector<const T*> p(ranks);
      for (int q = 0; q < ranks; ++q) p[q] = src[q].data();
      std::vector<T> got(n), want(n);
      body(p.data(), ranks, n, got.data());
      ref(p.data(), ranks, n, want.data());
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<Bits<T>>(got[i]), std::bit_cast<Bits<T>>(want[i]))
            << isa_name(s.isa) << " ranks " << ranks << " n " << n << " at " << i;
      // In place, into the last source (the all-reduce sums into a rank's own buffer).
      body(p.data(), ranks, n, src[ranks - 1].data());
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<Bits<T>>(src[ranks - 1][i]), std::bit_cast<Bits<T>>(want[i]))
            << isa_name(s.isa) << " in place, ranks " << ranks << " n " << n << " at " << i;
    }
}

TEST(AllReduceSums, VectorBodiesGiveTheReferenceBits) {
  int ran = 0;
  for (const AllReduceSums* s : kVectorSums) {
    if (!cpu_has(s->isa)) continue;
    if (s->f32) check<float>(*s, s->f32, kAllReduceScalar.f32), ++ran;
    if (s->bf16) check<bf16_t>(*s, s->bf16, kAllReduceScalar.bf16), ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no vector body runs on this CPU";
}

}  // namespace
}  // namespace sandwich::kernels
