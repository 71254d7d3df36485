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

#include "kernels/allreduce.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/microkernel.h"
#include "kernels/peak_probes.h"
#include "kernels/schedule.h"
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
  EXPECT_EQ(attention_isa(128), cap >= Isa::Avx512 ? Isa::Avx512 : Isa::Scalar);
  EXPECT_EQ(attention_isa(33), Isa::Scalar);  // odd head sizes have no vector body
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
    std::vector<float> storage(static_cast<size_t>(n_blocks * PagedKV::block_floats(1, hd)));
    PagedKV kv{storage.data(), PagedKV::block_floats(1, hd), 1, hd};
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
