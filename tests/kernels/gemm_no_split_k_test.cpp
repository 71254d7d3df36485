// GEMMs without split-k (GemmArgs::no_split_k, the paper's "w/o split-k" ablation): a schedule
// that splits K runs with its K threads given to N or M, tuned or not.
#include <bit>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/schedule.h"
#include "random_values.h"
#include "random_weights.h"

namespace sandwich::kernels {
namespace {

Schedule split_k_grid(Schedule s, int tm, int tn, int tk) {
  s.tm = tm;
  s.tn = tn;
  s.tk = tk;
  return s;
}

TEST(GemmNoSplitK, KThreadsGoToNWhereItHasThePanelsElseToM) {
  Schedule s;
  s.um = 4;
  // 200 columns are 4 panels: room for 2 x 2 threads along N.
  Schedule t = without_split_k(split_k_grid(s, 1, 2, 2), 1, 200);
  EXPECT_EQ(std::tuple(t.tm, t.tn, t.tk), std::tuple(1, 4, 1));
  // One panel, 64 rows (16 tiles of 4): M takes them.
  t = without_split_k(split_k_grid(s, 1, 1, 4), 64, 64);
  EXPECT_EQ(std::tuple(t.tm, t.tn, t.tk), std::tuple(4, 1, 1));
  // One panel and one row: neither has room; N takes them (as batch-invariant GEMMs always did).
  t = without_split_k(split_k_grid(s, 1, 1, 2), 1, 64);
  EXPECT_EQ(std::tuple(t.tm, t.tn, t.tk), std::tuple(1, 2, 1));
  // No split-k to remove: unchanged, slice and kernel included.
  s.bm = 96;
  s.bk = 512;
  EXPECT_EQ(without_split_k(split_k_grid(s, 2, 1, 1), 8, 64), split_k_grid(s, 2, 1, 1));
}

// A schedule with tk = 2 under no_split_k computes exactly what its tk = 1 form computes (the
// same sums in the same order, bit for bit), and that is the product within float tolerance.
TEST(GemmNoSplitK, ASplitKScheduleRunsWithOneKThread) {
  const int64_t m = 3, n = 256, k = 1024;
  ThreadTeam team(2);
  for (DType dt : {DType::BF16, DType::F32}) {
    const test::RandomWeights W = test::random_weights(n, k, dt, 7);
    const std::vector<float> x = test::random_normal(static_cast<size_t>(m * k), 8);
    const Schedule split = split_k_grid(default_schedule({m, n, k, dt, 2}), 1, 1, 2);
    const Schedule moved = without_split_k(split, m, n);
    ASSERT_EQ(moved.tk, 1);
    auto run = [&](const Schedule& s, bool no_split_k) {
      std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
      GemmArgs a{x.data(), k, m, y.data(), n};
      a.no_split_k = no_split_k;
      gemm(W.pw, a, team, &s);
      return y;
    };
    const std::vector<float> got = run(split, true), want = run(moved, false);
    std::vector<float> ref(static_cast<size_t>(m * n));
    gemm_ref(x.data(), k, W.w.data(), k, m, n, k, ref.data(), n);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << dtype_name(dt) << " element " << i;
      // The BF16 kernels round the activations: about 2^-9 of each of k products of size 1.
      const double tol = dt == DType::BF16 ? 0.02 * std::sqrt(double(k)) : 1e-3;
      ASSERT_NEAR(got[i], ref[i], tol) << dtype_name(dt) << " element " << i;
    }
  }
}

}  // namespace
}  // namespace sandwich::kernels
