// Every micro-kernel this CPU can run against a plain reference, and the activation packing
// the kernels read.
//
// Tolerances: the products of a BF16 weight and a BF16 (or F32) activation are exact in F32,
// so kernels differ from a double-precision reference only by F32 summation order:
// |err| <= 1e-5 * sum |x * w| here (K <= 100 terms of unit size).
#include <cmath>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

struct AlignedBytes {
  std::vector<unsigned char> raw;
  void* p;
  explicit AlignedBytes(size_t n) : raw(n + 64, 0) {
    p = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
  }
};

TEST(MicroKernels, EveryRunnableKernelMatchesTheReference) {
  int checked = 0;
  for (const MicroKernel& mk : microkernel_table()) {
    if (!cpu_has(mk.isa)) continue;
    for (int64_t k : {1, 2, 37, 64}) {
      const int g = k_group(mk.weights);
      const int64_t steps = (k + g - 1) / g;
      PackedWeight w = plan_packed_weight(kPanel, k, mk.weights);
      AlignedBytes wb(w.bytes);
      w.data = wb.p;
      const auto wf = test::random_normal(static_cast<size_t>(kPanel * k), 3, 1.0f, true);
      pack_weight(w, wf.data(), DType::F32, k);
      const auto x = test::random_normal(static_cast<size_t>(mk.um * k), 5, 1.0f, true);
      AlignedBytes ab(static_cast<size_t>(mk.um * steps * g) * 4);
      pack_activations(mk.isa, mk.weights, x.data(), k, mk.um, k, steps, ab.p);
      std::vector<float> ref(static_cast<size_t>(mk.um * kPanel)), mag(ref.size());
      gemm_ref(x.data(), k, wf.data(), k, mk.um, kPanel, k, ref.data(), kPanel);
      for (int i = 0; i < mk.um; ++i)
        for (int j = 0; j < kPanel; ++j)
          for (int64_t t = 0; t < k; ++t)
            mag[i * kPanel + j] += std::fabs(x[i * k + t] * wf[j * k + t]);
      // Every prefetching variant, fetching from a live buffer.
      for (int variant = 0; variant < 4; ++variant)
        for (bool acc : {false, true})
          for (int c0 : {0, kPanel - mk.un}) {
            // C is wider than the tile: columns outside [c0, c0 + un) must stay untouched.
            const int64_t ldc = kPanel + 3;
            std::vector<float> c(static_cast<size_t>(mk.um * ldc), 1.5f);
            const auto* b =
                static_cast<const unsigned char*>(w.data) + c0 * g * dtype_size(mk.weights);
            mk.fn[variant](ab.p, b, steps, c.data() + c0, ldc, acc, w.data);
            for (int i = 0; i < mk.um; ++i)
              for (int j = 0; j < ldc; ++j) {
                const bool in = j >= c0 && j < c0 + mk.un;
                const float want = in ? ref[i * kPanel + j] + (acc ? 1.5f : 0.0f) : 1.5f;
                const float tol = in ? 1e-5f * (mag[i * kPanel + j] + 1.5f) : 0.0f;
                ASSERT_NEAR(c[i * ldc + j], want, tol)
                    << mk.name() << " k=" << k << " acc=" << acc << " c0=" << c0
                    << " variant=" << variant << " at " << i << "," << j;
              }
          }
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);  // the scalar kernels at least
}

TEST(MicroKernels, TableListsEveryShapeThatFitsTheRegisters) {
  std::map<std::tuple<Isa, DType, int>, int> tallest;
  for (const MicroKernel& mk : microkernel_table()) {
    if (mk.isa == Isa::Avx512 || mk.isa == Isa::Avx512Bf16) {
      EXPECT_LE(mk.registers, 32) << mk.name();
    }
    if (mk.isa == Isa::Avx2) {
      EXPECT_LE(mk.registers, 16) << mk.name();
    }
    EXPECT_EQ(kPanel % mk.un, 0) << mk.name();
    int& t = tallest[{mk.isa, mk.weights, mk.un}];
    EXPECT_EQ(mk.um, t + 1) << mk.name() << ": heights must run 1, 2, ... without gaps";
    t = mk.um;
  }
  // AVX-512: um * V accumulators + V B vectors + a broadcast <= 32.
  EXPECT_EQ((tallest[{Isa::Avx512Bf16, DType::BF16, 64}]), 6);
  EXPECT_EQ((tallest[{Isa::Avx512Bf16, DType::BF16, 32}]), 14);
  EXPECT_EQ((tallest[{Isa::Avx512Bf16, DType::BF16, 16}]), 30);
  EXPECT_EQ((tallest[{Isa::Avx512, DType::F32, 64}]), 6);
  // AVX2: um * V + 4 (BF16) or + 2 (F32) <= 16.
  EXPECT_EQ((tallest[{Isa::Avx2, DType::BF16, 64}]), 1);
  EXPECT_EQ((tallest[{Isa::Avx2, DType::BF16, 8}]), 12);
  EXPECT_EQ((tallest[{Isa::Avx2, DType::F32, 8}]), 14);
  EXPECT_EQ((tallest[{Isa::Scalar, DType::F32, 64}]), 4);
}

TEST(MicroKernels, ActivationPanelsInterleaveRowsByKStep) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (!cpu_has(isa)) continue;
    for (DType wt : {DType::F32, DType::BF16})
      for (int64_t rows : {1, 3, 7})
        for (int64_t k : {1, 5, 40, 77}) {
          const int g = k_group(wt);
          const int64_t steps = (k + g - 1) / g + 1;  // one extra step: must be zero
          const int64_t ldx = k + 3;
          std::vector<float> x(static_cast<size_t>(rows * ldx));
          for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 11.0f;
          const DType at = activation_type(isa, wt);
          std::vector<unsigned char> out(static_cast<size_t>(rows * steps * g) * dtype_size(at),
                                         0xee);
          pack_activations(isa, wt, x.data(), ldx, rows, k, steps, out.data());
          for (int64_t j = 0; j < steps; ++j)
            for (int64_t m = 0; m < rows; ++m)
              for (int e = 0; e < g; ++e) {
                const int64_t col = j * g + e;
                const float src = col < k ? x[m * ldx + col] : 0.0f;
                const size_t idx = static_cast<size_t>((j * rows + m) * g + e);
                const float got =
                    at == DType::BF16
                        ? bf16_to_f32(reinterpret_cast<const bf16_t*>(out.data())[idx])
                        : reinterpret_cast<const float*>(out.data())[idx];
                const float want = at == DType::BF16 ? bf16_to_f32(f32_to_bf16(src)) : src;
                ASSERT_EQ(got, want) << isa_name(isa) << " " << dtype_name(wt) << " rows=" << rows
                                     << " k=" << k << " step " << j << " row " << m;
              }
        }
  }
}

}  // namespace
}  // namespace sandwich::kernels
