// The peak probes against their definitions (peak_probes.h), computed here in scalar code.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "kernels/peak_probes.h"

namespace sandwich::kernels {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

TEST(PeakProbes, StreamReadIsTheXorOfTheWords) {
  constexpr size_t kWords = (size_t{1} << 17) + 96;
  std::unique_ptr<uint64_t, FreeDeleter> buf(
      static_cast<uint64_t*>(std::aligned_alloc(64, kWords * 8)));
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < kWords; ++i) buf.get()[i] = rng();
  // Empty, one step, odd step counts, a start past the first line.
  for (auto [first, bytes] : {std::pair<size_t, size_t>{0, 0},
                              {0, 256},
                              {0, 256 * 7},
                              {8, 256 * 3},
                              {24, (kWords - 32) / 32 * 256}}) {
    uint64_t want = 0;
    for (size_t i = 0; i < bytes / 8; ++i) want ^= buf.get()[first + i];
    EXPECT_EQ(stream_read(buf.get() + first, bytes), want) << first << " " << bytes;
  }
}

TEST(PeakProbes, StreamReadRejectsWhatItCannotRead) {
  alignas(64) static uint64_t words[64];
  EXPECT_THROW(stream_read(words + 1, 256), std::invalid_argument);
  EXPECT_THROW(stream_read(words, 100), std::invalid_argument);
}

TEST(PeakProbes, FmaLoopFollowsItsDefinition) {
  const PeakLoop loop = fma_f32_peak_loop();
  if (!loop.run) GTEST_SKIP() << "no FMA on this CPU";
  const int lanes = loop.isa == Isa::Avx2 ? 8 : 16;
  EXPECT_EQ(loop.flops_per_iter, 2.0 * lanes * loop.chains);
  for (int64_t iters : {0, 1, 1000}) {
    float want = 0;
    for (int c = 0; c < loop.chains; ++c) {
      float x = static_cast<float>(c) * 1e-3f;
      for (int64_t i = 0; i < iters; ++i) x = std::fma(x, 0.999999f, 1e-7f);
      want = c == 0 ? x : want + x;
    }
    EXPECT_EQ(loop.run(iters), want) << iters;
  }
}

TEST(PeakProbes, Bf16LoopFollowsItsDefinition) {
  const PeakLoop loop = bf16_dot_peak_loop();
  if (!loop.run) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  EXPECT_EQ(loop.isa, Isa::Avx512Bf16);
  EXPECT_EQ(loop.flops_per_iter, 4.0 * 16 * loop.chains);
  EXPECT_EQ(loop.run(1000), 2.0f * loop.chains * 1000);
}

}  // namespace
}  // namespace sandwich::kernels
