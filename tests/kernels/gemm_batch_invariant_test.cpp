// Batch-invariant GEMMs (GemmArgs::batch_invariant): a row's output is bitwise the same whatever
// M, the row's place among the M rows, the thread count and the schedule; the default mode keeps
// its faster kernels and split-k.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "random_values.h"
#include "random_weights.h"

namespace sandwich::kernels {
namespace {

using test::random_weights;
using test::RandomWeights;

// Rows `rows` of pool (k columns each) through the GEMM; y starts at a value per pool row, so
// the Accumulate epilogue adds to the same number in every batch.
std::vector<float> gemm_rows(const PackedWeight& w, const std::vector<float>& pool, int64_t k,
                             const std::vector<int>& rows, ThreadTeam& team, bool invariant,
                             Epilogue epilogue = Epilogue::Store,
                             const Schedule* schedule = nullptr) {
  const int64_t m = static_cast<int64_t>(rows.size()), n = w.n;
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(x.data() + i * k, pool.data() + rows[i] * k, static_cast<size_t>(k) * 4);
    std::fill(y.begin() + i * n, y.begin() + (i + 1) * n, 0.25f * static_cast<float>(rows[i]));
  }
  GemmArgs a{x.data(), k, m, y.data(), n};
  a.epilogue = epilogue;
  a.batch_invariant = invariant;
  gemm(w, a, team, schedule);
  return y;
}

// Row i of y against want, bit for bit.
void expect_row_bitwise(const float* got, const float* want, int64_t n, const std::string& what) {
  for (int64_t j = 0; j < n; ++j)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[j]), std::bit_cast<uint32_t>(want[j]))
        << what << " column " << j << ": " << got[j] << " vs " << want[j];
}

// M rows taken from the pool in a scattered order, so that each row sits at other places (and in
// other tiles and tile heights) as M changes.
std::vector<int> scattered_rows(int m, int pool_rows) {
  std::vector<int> rows(m);
  for (int i = 0; i < m; ++i) rows[i] = (i * 37 + m * 11) % pool_rows;
  return rows;
}

// K long enough for several K blocks and for split-k in the default mode; N not a whole number
// of panels. Activations are not BF16-exact, so the BF16 kernels round them too.
TEST(GemmBatchInvariant, ARowIsBitwiseTheSameForAnyMAndPlace) {
  const int64_t n = 200, k = 1100;
  const int pool_rows = 128;
  const auto pool = test::random_normal(static_cast<size_t>(pool_rows * k), 31);
  for (DType dt : {DType::BF16, DType::F32}) {
    const RandomWeights W = random_weights(n, k, dt, 32);
    for (auto [threads, ep] : {std::tuple{1, Epilogue::Store}, std::tuple{2, Epilogue::Store},
                               std::tuple{2, Epilogue::Accumulate}}) {
      ThreadTeam team(threads);
      std::vector<std::vector<float>> alone(pool_rows);
      for (int r = 0; r < pool_rows; ++r) alone[r] = gemm_rows(W.pw, pool, k, {r}, team, true, ep);
      for (int m : {2, 3, 5, 7, 16, 64, 128}) {
        const auto rows = scattered_rows(m, pool_rows);
        const auto y = gemm_rows(W.pw, pool, k, rows, team, true, ep);
        for (int i = 0; i < m; ++i)
          expect_row_bitwise(y.data() + i * n, alone[rows[i]].data(), n,
                             std::string(dtype_name(dt)) + " threads " + std::to_string(threads) +
                                 " m " + std::to_string(m) + " row " + std::to_string(i) +
                                 " (pool row " + std::to_string(rows[i]) + ")");
      }
    }
  }
}

TEST(GemmBatchInvariant, GateUpPairRowsAreBitwiseTheSameForAnyM) {
  const int64_t n = 300, k = 770;
  const int pool_rows = 64;
  const auto pool = test::random_normal(static_cast<size_t>(pool_rows * k), 41);
  for (DType dt : {DType::BF16, DType::F32}) {
    const RandomWeights G = random_weights(n, k, dt, 42), U = random_weights(n, k, dt, 43);
    ThreadTeam team(2);
    auto run = [&](const std::vector<int>& rows) {
      const int64_t m = static_cast<int64_t>(rows.size());
      std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(x.data() + i * k, pool.data() + rows[i] * k, static_cast<size_t>(k) * 4);
      GemmArgs a{x.data(), k, m, y.data(), n};
      a.batch_invariant = true;
      gemm_silu_mul(G.pw, U.pw, a, team);
      return y;
    };
    for (int m : {2, 7, 64}) {
      const auto rows = scattered_rows(m, pool_rows);
      const auto y = run(rows);
      for (int i = 0; i < m; ++i)
        expect_row_bitwise(
            y.data() + i * n, run({rows[i]}).data(), n,
            std::string(dtype_name(dt)) + " m " + std::to_string(m) + " row " + std::to_string(i));
    }
  }
}

// Explicit schedules, split-k ones included, and every tile of the GEMM's ISA: the same bits as
// the cost model's choice, and still the product (BF16-exact data: F32 rounding only).
TEST(GemmBatchInvariant, EveryScheduleSumsInTheSameOrder) {
  const int64_t m = 13, n = 192 + 37, k = 601;
  const auto x = test::random_normal(static_cast<size_t>(m * k), 51, 1.0f, true);
  std::vector<int> all(m);
  for (int i = 0; i < m; ++i) all[i] = i;
  for (DType dt : {DType::BF16, DType::F32}) {
    const RandomWeights W = random_weights(n, k, dt, 52);
    std::vector<float> ref(static_cast<size_t>(m * n));
    gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
    ThreadTeam team(2);
    const auto want = gemm_rows(W.pw, x, k, all, team, true);
    int tried = 0;
    for (const MicroKernel& mk : microkernel_table()) {
      if (mk.weights != dt || mk.isa != gemm_isa(dt)) continue;
      for (auto [tm, tn, tk, bk] : {std::tuple{1, 2, 1, 64}, std::tuple{2, 1, 1, 1024},
                                    std::tuple{1, 1, 2, 62}, std::tuple{1, 1, 2, 1024}}) {
        Schedule s;
        s.isa = mk.isa;
        s.um = mk.um;
        s.un = mk.un;
        s.bm = mk.um * 2;
        s.bn = 128;
        s.bk = bk;
        s.tm = tm;
        s.tn = tn;
        s.tk = tk;
        const auto y = gemm_rows(W.pw, x, k, all, team, true, Epilogue::Store, &s);
        const std::string what = mk.name() + " " + s.to_string();
        for (int64_t i = 0; i < m; ++i)
          expect_row_bitwise(y.data() + i * n, want.data() + i * n, n, what);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            ASSERT_NEAR(y[i * n + j], ref[i * n + j], 1e-4 * std::sqrt(k) + 1e-5)
                << what << " at " << i << "," << j;
        ++tried;
      }
    }
    EXPECT_GE(tried, 8);
  }
}

// A one-set variant is the kernel itself where the kernel has one set already.
TEST(GemmBatchInvariant, EveryKernelHasAOneSetVariant) {
  for (const MicroKernel& mk : microkernel_table())
    for (int i = 0; i < 4; ++i) {
      ASSERT_NE(mk.one_set[i], nullptr) << mk.name();
      if (mk.acc_sets == 1) {
        EXPECT_EQ(mk.one_set[i], mk.fn[i]) << mk.name();
      }
    }
}

// The default mode is left as it was: split-k where the cost model chose it, and the two-set
// tiles of short M, whose sums differ from the one-set ones.
TEST(GemmBatchInvariant, TheDefaultModeKeepsSplitKAndTwoSetTiles) {
  GemmShape decode{1, 64, 8192, DType::BF16, 2};
  GemmShape invariant = decode;
  invariant.batch_invariant = true;
  EXPECT_EQ(default_schedule(decode).tk, 2) << default_schedule(decode).to_string();
  EXPECT_EQ(default_schedule(invariant).tk, 1) << default_schedule(invariant).to_string();

  if (gemm_isa(DType::BF16) != Isa::Avx512Bf16) GTEST_SKIP() << "two-set tiles are AVX-512's";
  const int64_t n = 200, k = 2400;
  const auto x = test::random_normal(static_cast<size_t>(k), 61);
  const RandomWeights W = random_weights(n, k, DType::BF16, 62);
  ThreadTeam team(1);
  const auto fast = gemm_rows(W.pw, x, k, {0}, team, false);
  const auto fixed = gemm_rows(W.pw, x, k, {0}, team, true);
  int differ = 0;
  for (int64_t j = 0; j < n; ++j) differ += fast[j] != fixed[j];
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace sandwich::kernels
