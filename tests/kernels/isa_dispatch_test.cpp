// One ISA check for every kernel: each family reports the ISA it runs, never above cpu_isa(), and
// SANDWICH_ISA caps them all. ctest runs this binary a second and third time under
// SANDWICH_ISA=scalar and =avx2 (tests/kernels/CMakeLists.txt), which also compares the AVX2 and
// scalar bodies with the references through every other test here.
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "allreduce_sum.h"
#include "attention_kernels.h"
#include "elementwise_kernels.h"
#include "kernels/allreduce.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/microkernel.h"
#include "kernels/peak_probes.h"
#include "kernels/schedule.h"
#include "peak_probe_bodies.h"
#include "quant_layout.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  return test::random_normal(n, seed, 2.0f);
}

#define EXPECT_ISA_AT_MOST(isa, cap) \
  EXPECT_LE(static_cast<int>(isa), static_cast<int>(cap)) << isa_name(isa) << " > " << isa_name(cap)

TEST(IsaDispatch, NoKernelRunsAboveTheCpuIsa) {
  const Isa cap = cpu_isa();
  EXPECT_ISA_AT_MOST(elementwise_isa(), cap);
  EXPECT_ISA_AT_MOST(attention_isa(128), cap);
  EXPECT_ISA_AT_MOST(all_reduce_isa(DType::F32), cap);
  EXPECT_ISA_AT_MOST(all_reduce_isa(DType::BF16), cap);
  EXPECT_ISA_AT_MOST(gemm_isa(DType::F32), cap);
  EXPECT_ISA_AT_MOST(gemm_isa(DType::BF16), cap);
  EXPECT_ISA_AT_MOST(fma_f32_peak_loop().isa, cap);
  EXPECT_ISA_AT_MOST(bf16_dot_peak_loop().isa, cap);
  EXPECT_ISA_AT_MOST(quant_gemm_isa(), cap);
  // The widest body of each family that this CPU allows.
  EXPECT_EQ(elementwise_isa(), cap >= Isa::Avx512 ? Isa::Avx512 : cap);
  EXPECT_EQ(attention_isa(128), cap >= Isa::Avx512 ? Isa::Avx512 : cap);
  EXPECT_EQ(attention_isa(33), Isa::Scalar);  // odd head sizes have no vector body
  EXPECT_EQ(all_reduce_isa(DType::F32), cap >= Isa::Avx512 ? Isa::Avx512 : cap);
  EXPECT_EQ(all_reduce_isa(DType::BF16), cap == Isa::Avx512 ? Isa::Avx2 : cap);
  EXPECT_EQ(fma_f32_peak_loop().isa, cap >= Isa::Avx512 ? Isa::Avx512 : cap);
  EXPECT_EQ(fma_f32_peak_loop().run != nullptr, cap >= Isa::Avx2);
  EXPECT_EQ(bf16_dot_peak_loop().run != nullptr, cap >= Isa::Avx512Bf16);
  // Quantized weights: AVX-512 only with VNNI, else AVX2.
  EXPECT_EQ(quant_gemm_isa(), cap >= Isa::Avx512 && cpu_has_avx512_vnni() ? Isa::Avx512
                              : cap >= Isa::Avx2                          ? Isa::Avx2
                                                                          : Isa::Scalar);
}

TEST(IsaDispatch, SandwichIsaCapsTheCpuIsa) {
  const char* env = std::getenv("SANDWICH_ISA");
  if (!env || !*env) GTEST_SKIP() << "meant for ctest's kernels_tests_isa_* runs";
  const std::string want = env;
  if (want == "scalar") {
    EXPECT_EQ(cpu_isa(), Isa::Scalar);
  } else if (want == "avx2") {
    EXPECT_ISA_AT_MOST(cpu_isa(), Isa::Avx2);
  } else if (want == "avx512") {
    EXPECT_ISA_AT_MOST(cpu_isa(), Isa::Avx512);
  }
}

// Each family's tables, widest first, as its dispatch walks them: a table's bodies are its ISA's,
// and the scalar table, the last, has every body but the peak loops (no scalar FMA peak).
TEST(IsaDispatch, EveryTableIsItsIsas) {
  const ElementwiseKernels* elementwise[] = {&kElementwiseAvx512, &kElementwiseAvx2,
                                             &kElementwiseScalar};
  const AttentionKernels* attention[] = {&kAttentionAvx512, &kAttentionAvx2, &kAttentionScalar};
  const AllReduceSums* sums[] = {&kAllReduceAvx512Bf16, &kAllReduceAvx512, &kAllReduceAvx2,
                                 &kAllReduceScalar};
  const PeakProbeKernels* probes[] = {&kPeakProbesAvx512Bf16, &kPeakProbesAvx512, &kPeakProbesAvx2,
                                      &kPeakProbesScalar};
  const QuantKernels* quant[] = {&kQuantAvx512, &kQuantAvx2, &kQuantScalar};
  auto widest_first = [](const auto& tables) {
    for (size_t i = 1; i < std::size(tables); ++i)
      EXPECT_GT(static_cast<int>(tables[i - 1]->isa), static_cast<int>(tables[i]->isa));
    EXPECT_EQ(tables[std::size(tables) - 1]->isa, Isa::Scalar);
  };
  widest_first(elementwise);
  widest_first(attention);
  widest_first(sums);
  widest_first(probes);
  widest_first(quant);
  for (const auto* t : attention) {
    EXPECT_TRUE(t->fits(128)) << isa_name(t->isa);
    EXPECT_EQ(t->fits(33), t->isa == Isa::Scalar) << isa_name(t->isa);
  }
  EXPECT_TRUE(kAttentionScalar.fits(4096));
  EXPECT_TRUE(kAllReduceScalar.f32 && kAllReduceScalar.bf16);
  EXPECT_TRUE(kAllReduceAvx2.f32 && kAllReduceAvx2.bf16);
  for (const auto* t : probes) {
    if (t->fma_f32.run) {
      EXPECT_EQ(t->fma_f32.isa, t->isa);
    }
    if (t->bf16_dot.run) {
      EXPECT_EQ(t->bf16_dot.isa, t->isa);
    }
  }
  EXPECT_TRUE(kPeakProbesScalar.stream_read);
  for (const auto* t : quant) {
    EXPECT_EQ(quant_max_rows(t->isa), t->max_rows) << isa_name(t->isa);
    EXPECT_NE(t->kernel(QType::Q4_0, 1, false), nullptr) << isa_name(t->isa);
    EXPECT_EQ(t->kernel(QType::Q4_0, t->max_rows + 1, false), nullptr) << isa_name(t->isa);
  }
}

// The stream read of every table this CPU runs gives the reference's XOR.
TEST(IsaDispatch, StreamReadBodiesMatchTheReference) {
  alignas(64) static uint64_t words[4096 / 8];  // the read's 64-byte aligned start
  std::mt19937_64 rng(7);
  for (auto& w : words) w = rng();
  const uint64_t want = kPeakProbesScalar.stream_read(words, 4096);
  EXPECT_EQ(stream_read(words, 4096), want);
  for (const PeakProbeKernels* t : {&kPeakProbesAvx512, &kPeakProbesAvx2})
    if (cpu_has(t->isa)) {
      EXPECT_EQ(t->stream_read(words, 4096), want) << isa_name(t->isa);
    }
}

// Where a family reports Scalar, its results are the reference's, bit for bit.
TEST(IsaDispatch, ScalarElementwiseIsTheReference) {
  if (elementwise_isa() != Isa::Scalar) GTEST_SKIP() << "runs " << isa_name(elementwise_isa());
  const size_t n = 77;
  const auto x = random_vec(n, 1), w = random_vec(n, 2), u = random_vec(n, 3);
  std::vector<float> a(n), b(n);
  rmsnorm(x.data(), w.data(), a.data(), n, 1e-5f);
  rmsnorm_ref(x.data(), w.data(), b.data(), n, 1e-5f);
  EXPECT_EQ(a, b);
  silu_mul(x.data(), u.data(), a.data(), n);
  silu_mul_ref(x.data(), u.data(), b.data(), n);
  EXPECT_EQ(a, b);
  a = x, b = x;
  softmax(a.data(), n);
  softmax_ref(b.data(), n);
  EXPECT_EQ(a, b);
  a = x, b = x;
  rope(a.data(), 1, 76, w.data(), u.data());
  rope_ref(b.data(), 1, 76, w.data(), u.data());
  EXPECT_EQ(a, b);
}

TEST(IsaDispatch, ScalarAttentionIsTheReference) {
  for (int32_t hd : {33, 64}) {
    if (attention_isa(hd) != Isa::Scalar) continue;
    const int32_t n_tok = 5, start = 20, total = start + n_tok;
    const int32_t n_blocks = (total + kKVBlock - 1) / kKVBlock;
    std::vector<float> storage(static_cast<size_t>(n_blocks * PagedKV::block_elements(1, hd)));
    PagedKV kv{storage.data(), PagedKV::block_elements(1, hd), 1, hd};
    std::vector<int32_t> table(n_blocks);
    std::iota(table.begin(), table.end(), 0);
    for (int32_t p = 0; p < total; ++p) {
      const auto k = random_vec(hd, 10 + p), v = random_vec(hd, 100 + p);
      kv_store(kv, table.data(), p, 0, 1, k.data(), v.data());
    }
    const auto q = random_vec(static_cast<size_t>(n_tok * 2 * hd), 5);
    std::vector<float> out(q.size()), ref(q.size());
    attention(kv, table.data(), 0, q.data(), 2 * hd, n_tok, 2, start, 0.1f, out.data(), 2 * hd);
    attention_ref(kv, table.data(), 0, q.data(), 2 * hd, n_tok, 2, start, 0.1f, ref.data(), 2 * hd);
    EXPECT_EQ(out, ref) << "head_dim " << hd;
  }
}

}  // namespace
}  // namespace sandwich::kernels
