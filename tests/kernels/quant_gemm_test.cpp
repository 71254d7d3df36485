// GEMM with quantized weights: every block type against references on dequantized weights,
// the integer kernels of every ISA against each other bit for bit, shards, epilogues, the
// BF16-unpacking path and the refusals.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/schedule.h"
#include "kernels/thread_team.h"
#include "random_quant_blocks.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

constexpr QType kAll[] = {QType::Q4_0, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::Q8_0,
                          QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::Q8_K};

std::string name(QType t) {
  return std::string(qtype_info(t).name);
}

std::vector<float> dequantized(QType t, int64_t n, int64_t k, const std::vector<uint8_t>& b) {
  std::vector<float> w(static_cast<size_t>(n * k));
  dequantize_ref(t, b.data(), w.data(), n * k);
  return w;
}

// The activations as the integer kernels see them: per 32 values, scale max|x| / 127 and
// values rounded to nearest (even) of x * 127 / max|x|.
std::vector<float> quantized_activations(const std::vector<float>& x, int64_t m, int64_t k,
                                         std::vector<float>* scales) {
  std::vector<float> q(x.size());
  scales->assign(x.size() / 32, 0.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < k / 32; ++b) {
      const float* xb = x.data() + r * k + 32 * b;
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
      const float d = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
      (*scales)[r * (k / 32) + b] = d;
      for (int j = 0; j < 32; ++j)
        q[r * k + 32 * b + j] = std::clamp(std::nearbyint(xb[j] * inv), -127.0f, 127.0f) * d;
    }
  return q;
}

// Slices of 2 tiles x bn columns x bk k: small ones cut M, N and K into many pieces.
Schedule integer_schedule(Isa isa, int um, int threads, int64_t bn = 64, int64_t bk = 1024) {
  Schedule s;
  s.isa = isa;
  s.um = um;
  s.un = 16;
  s.bm = um * 2;
  s.bn = bn;
  s.bk = bk;
  s.tn = threads;
  return s;
}

std::vector<Isa> integer_isas() {
  std::vector<Isa> v{Isa::Scalar};
  if (cpu_has(Isa::Avx2)) v.push_back(Isa::Avx2);
  if (cpu_has_avx512_vnni()) v.push_back(Isa::Avx512);
  return v;
}

int max_rows(Isa isa) {
  return isa == Isa::Avx512 ? 8 : 4;
}

std::vector<float> run_gemm(const PackedWeight& w, const std::vector<float>& x, int64_t m,
                            ThreadTeam& team, const Schedule* s, int64_t n0 = 0, int64_t n1 = -1,
                            int64_t k0 = 0, int64_t k1 = -1) {
  const int64_t nn = (n1 < 0 ? w.n : n1) - n0, kk = (k1 < 0 ? w.k : k1) - k0;
  std::vector<float> y(static_cast<size_t>(m * nn), -7.0f);
  std::vector<float> xs(static_cast<size_t>(m * kk));
  for (int64_t r = 0; r < m; ++r) std::copy_n(x.data() + r * w.k + k0, kk, xs.data() + r * kk);
  const GemmArgs a{.x = xs.data(),
                   .ldx = kk,
                   .m = m,
                   .y = y.data(),
                   .ldy = nn,
                   .n0 = n0,
                   .n1 = n1,
                   .k0 = k0,
                   .k1 = k1};
  gemm(w, a, team, s);
  return y;
}

TEST(QuantPack, PlansPanelsOfBlocksAndRefusesPartialBlocks) {
  for (QType t : kAll) {
    const QTypeInfo& info = qtype_info(t);
    const PackedWeight w = plan_packed_weight_quant(37, 2 * info.block_elems, t);
    EXPECT_TRUE(w.qtype == t);
    EXPECT_EQ(w.panel, 16);
    EXPECT_EQ(w.panels(), 3);
    EXPECT_EQ(w.panel_bytes() % 64, 0u);
    EXPECT_EQ(shard_granularity_n(w), 16);
    EXPECT_EQ(shard_granularity_k(w), info.block_elems);
    // Close to ggml's own size: the same bits, only Q4_K/Q5_K's scales take 4 more bytes.
    EXPECT_LE(w.panel_bytes(), static_cast<size_t>(16 * 2 * (info.block_bytes + 4) + 63));
    try {
      plan_packed_weight_quant(16, info.block_elems + 16, t);
      ADD_FAILURE() << name(t) << ": a partial block was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(info.block_elems)), std::string::npos)
          << e.what();
    }
  }
}

TEST(QuantPack, RoundTripsBlocksAndDequantizesAsTheReference) {
  for (QType t : kAll) {
    const QTypeInfo& info = qtype_info(t);
    const int64_t n = 37, k = 3 * info.block_elems, row_bytes = 3 * info.block_bytes;
    const auto blocks = test::random_quant_blocks(t, n, k, 11);
    const auto q = test::pack_quant(t, n, k, blocks);
    const auto ref = dequantized(t, n, k, blocks);
    std::vector<uint8_t> row(static_cast<size_t>(row_bytes));
    std::vector<float> f(static_cast<size_t>(k));
    for (int64_t r = 0; r < n; ++r) {
      unpack_row_blocks(q.pw, r, row.data());
      ASSERT_EQ(std::memcmp(row.data(), blocks.data() + r * row_bytes, row.size()), 0)
          << name(t) << " row " << r;
      unpack_row(q.pw, r, f.data());
      ASSERT_EQ(std::memcmp(f.data(), ref.data() + r * k, f.size() * 4), 0)
          << name(t) << " row " << r;
    }
  }
}

TEST(QuantPack, RowMapAndRowRangesPackTheSameRows) {
  const QType t = QType::Q4_K;
  const int64_t n = 40, k = 256, row_bytes = qtype_info(t).block_bytes;
  const auto blocks = test::random_quant_blocks(t, n, k, 12);
  std::vector<int64_t> map(n);
  for (int64_t r = 0; r < n; ++r) map[r] = (r * 7) % n;
  auto q = test::pack_quant(t, n, k, blocks);
  pack_weight_quant(q.pw, blocks.data(), row_bytes, map.data());
  std::vector<uint8_t> row(static_cast<size_t>(row_bytes));
  for (int64_t r = 0; r < n; ++r) {
    unpack_row_blocks(q.pw, r, row.data());
    EXPECT_EQ(std::memcmp(row.data(), blocks.data() + map[r] * row_bytes, row.size()), 0);
  }
  auto q2 = test::pack_quant(t, n, k, blocks);
  std::fill(q2.raw.begin(), q2.raw.end(), 0);
  pack_weight_quant_rows(q2.pw, blocks.data(), row_bytes, 0, 16);
  pack_weight_quant_rows(q2.pw, blocks.data() + 16 * row_bytes, row_bytes, 16, 40);
  const auto q3 = test::pack_quant(t, n, k, blocks);
  EXPECT_EQ(std::memcmp(q2.pw.data, q3.pw.data, q3.pw.bytes), 0);
  EXPECT_THROW(pack_weight_quant_rows(q2.pw, blocks.data(), row_bytes, 8, 16),
               std::invalid_argument);
}

// Every ISA's integer kernels give the scalar reference's bits, at every tile height, and
// those agree with sums on the dequantized weights and the quantized activations (exact but
// for float rounding) and, within the activation rounding, with the f32 activations.
class QuantGemmTypes : public ::testing::TestWithParam<QType> {};

TEST_P(QuantGemmTypes, EveryIsaMatchesTheReferences) {
  ThreadTeam team(2);
  {
    const QType t = GetParam();
    const int be = qtype_info(t).block_elems;
    for (int64_t m : {1, 2, 3, 7, 16, 33, 64, 100}) {
      // n: one whole panel, or tails of the 16-row panel; k: one block or several.
      const int64_t n = m == 7 || m >= 64 ? 16 : 37, k = (m % 2 || m >= 64 ? 1 : 3) * be;
      const uint32_t seed = static_cast<uint32_t>(m * 100 + static_cast<int>(t));
      const auto blocks = test::random_quant_blocks(t, n, k, seed);
      const auto q = test::pack_quant(t, n, k, blocks);
      const auto w = dequantized(t, n, k, blocks);
      const auto x = test::random_normal(static_cast<size_t>(m * k), seed + 1);
      std::vector<float> da;
      const auto xq = quantized_activations(x, m, k, &da);
      const Schedule s0 = integer_schedule(Isa::Scalar, 4, 2);
      const auto ref = run_gemm(q.pw, x, m, team, &s0);
      for (Isa isa : integer_isas())
        for (int um : {1, 3, max_rows(isa)}) {
          if (m >= 64 && um != max_rows(isa)) continue;  // the big batches once per ISA
          const Schedule s =
              um == 3 ? integer_schedule(isa, um, 1, 16, be) : integer_schedule(isa, um, 2);
          ThreadTeam one(1);
          const auto y = run_gemm(q.pw, x, m, um == 3 ? one : team, &s);
          ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
              << name(t) << " " << isa_name(isa) << " um " << um << " m " << m;
        }
      const auto y = run_gemm(q.pw, x, m, team, nullptr);
      ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0) << name(t) << " default";
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double exact = 0, mag = 0, f32 = 0, bound = 0;
          for (int64_t j = 0; j < k; ++j) {
            const double wv = w[c * k + j];
            exact += wv * xq[r * k + j];
            mag += std::fabs(wv * xq[r * k + j]);
            f32 += wv * x[r * k + j];
            bound += std::fabs(wv) * da[r * (k / 32) + j / 32] * 0.5;
          }
          const double got = y[r * n + c];
          // Float rounding of the per-unit sums and scales (mins may cancel: 1e-5, not 1 ulp).
          EXPECT_NEAR(got, exact, 1e-5 * mag + 1e-6)
              << name(t) << " m " << m << " " << r << "," << c;
          // Each activation moves by at most half its scale when rounded to int8.
          EXPECT_NEAR(got, f32, 1.001 * bound + 1e-5 * mag + 1e-6) << name(t) << " f32";
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantGemmTypes, ::testing::ValuesIn(kAll),
                         [](const auto& info) { return name(info.param); });

// Activations every quantizer must round alike: zeros, one value per unit, ties (x * 127 /
// max|x| exactly halfway), tiny and huge magnitudes, and an Inf or NaN (garbage out, the same
// garbage on every ISA, no crash).
TEST(QuantGemm, ActivationEdgeCasesGiveTheSameBitsOnEveryIsa) {
  ThreadTeam team(2);
  const int64_t n = 32, k = 256, m = 7;
  std::vector<float> x(static_cast<size_t>(m * k), 0.0f);        // row 0: zeros
  for (int64_t j = 0; j < k; j += 32) x[1 * k + j + 5] = -3.0f;  // row 1: one value per unit
  for (int64_t j = 0; j < k; ++j) {
    // Row 2: max 127 so x * 127 / 127 = x, and halves: 0.5, 1.5, 2.5, ... -0.5, ...
    x[2 * k + j] =
        j % 32 == 0 ? 127.0f : (j % 2 ? 1.0f : -1.0f) * (static_cast<float>(j % 9) + 0.5f);
    x[3 * k + j] = 1e-30f * static_cast<float>(j % 7 - 3);  // tiny
    x[4 * k + j] = 1e30f * static_cast<float>(j % 5 - 2);   // huge
    x[5 * k + j] = static_cast<float>(j % 11) - 5.0f;
    x[6 * k + j] = static_cast<float>(j % 13) - 6.0f;
  }
  x[5 * k + 40] = std::numeric_limits<float>::infinity();
  x[6 * k + 70] = std::numeric_limits<float>::quiet_NaN();
  for (QType t : kAll) {
    const auto blocks = test::random_quant_blocks(t, n, k, 31);
    const auto q = test::pack_quant(t, n, k, blocks);
    const Schedule s0 = integer_schedule(Isa::Scalar, 1, 2);
    const auto ref = run_gemm(q.pw, x, m, team, &s0);
    for (int64_t c = 0; c < n; ++c) EXPECT_EQ(ref[c], 0.0f) << name(t);  // zero row, zero out
    for (Isa isa : integer_isas()) {
      const Schedule s = integer_schedule(isa, max_rows(isa) >= 8 ? 7 : 4, 2);
      const auto y = run_gemm(q.pw, x, m, team, &s);
      EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
          << name(t) << " " << isa_name(isa);
    }
  }
}

TEST(QuantGemm, LargeBatchesMatchSmallOnesBitForBit) {
  ThreadTeam team(2);
  for (QType t : {QType::Q4_0, QType::Q6_K}) {
    const int64_t n = 50, k = 256, m = 100;
    const auto blocks = test::random_quant_blocks(t, n, k, 5);
    const auto q = test::pack_quant(t, n, k, blocks);
    const auto x = test::random_normal(static_cast<size_t>(m * k), 6);
    const auto all = run_gemm(q.pw, x, m, team, nullptr);
    for (int64_t m2 : {1, 64}) {
      const auto part = run_gemm(q.pw, x, m2, team, nullptr);
      EXPECT_EQ(std::memcmp(part.data(), all.data(), part.size() * 4), 0) << name(t) << " " << m2;
    }
    // A batch-invariant call keeps to the integer path whatever the schedule asks.
    Schedule unpack = default_quant_schedule(QuantShape{m, n, k, t, 2});
    unpack.unpack_bf16 = true;
    std::vector<float> y(all.size());
    GemmArgs a{.x = x.data(), .ldx = k, .m = m, .y = y.data(), .ldy = n, .batch_invariant = true};
    gemm(q.pw, a, team, &unpack);
    EXPECT_EQ(std::memcmp(y.data(), all.data(), y.size() * 4), 0) << name(t);
    a.batch_invariant = false;
    gemm(q.pw, a, team, &unpack);
    EXPECT_NE(std::memcmp(y.data(), all.data(), y.size() * 4), 0) << name(t) << " (BF16 path)";
  }
}

TEST(QuantGemm, ShardsOnBlocksAddUpAndCutsAreRefused) {
  ThreadTeam team(2);
  for (QType t : {QType::Q8_0, QType::Q5_K}) {
    const int be = qtype_info(t).block_elems;
    const int64_t n = 48, k = 4 * be, m = 3;
    const auto blocks = test::random_quant_blocks(t, n, k, 8);
    const auto q = test::pack_quant(t, n, k, blocks);
    const auto x = test::random_normal(static_cast<size_t>(m * k), 9);
    const auto full = run_gemm(q.pw, x, m, team, nullptr);
    // Output shard: the same sums, so the same bits.
    const auto ys = run_gemm(q.pw, x, m, team, nullptr, 16, 37);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < 21; ++c) EXPECT_EQ(ys[r * 21 + c], full[r * n + 16 + c]);
    // K shards: Store then Accumulate adds to the whole sum (regrouped: not bitwise).
    std::vector<float> y(static_cast<size_t>(m * n));
    for (int part = 0; part < 2; ++part) {
      const int64_t k0 = part ? be : 0, k1 = part ? k : be;
      std::vector<float> xs(static_cast<size_t>(m * (k1 - k0)));
      for (int64_t r = 0; r < m; ++r)
        std::copy_n(x.data() + r * k + k0, k1 - k0, xs.data() + r * (k1 - k0));
      const GemmArgs a{.x = xs.data(),
                       .ldx = k1 - k0,
                       .m = m,
                       .y = y.data(),
                       .ldy = n,
                       .k0 = k0,
                       .k1 = k1,
                       .epilogue = part ? Epilogue::Accumulate : Epilogue::Store};
      gemm(q.pw, a, team);
    }
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], full[i], 1e-5 * (1 + std::fabs(full[i])));
    // A cut block and a cut panel are refused, naming the size.
    GemmArgs a{.x = x.data(), .ldx = k, .m = m, .y = y.data(), .ldy = n, .k0 = 16};
    try {
      gemm(q.pw, a, team);
      ADD_FAILURE() << "a cut block was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("block size " + std::to_string(be)), std::string::npos)
          << e.what();
    }
    a.k0 = 0;
    a.k1 = be + 16;
    EXPECT_THROW(gemm(q.pw, a, team), std::invalid_argument);
    a.k1 = -1;
    a.n0 = 8;
    EXPECT_THROW(gemm(q.pw, a, team), std::invalid_argument);
  }
}

TEST(QuantGemm, AccumulateAndSiluMulEpilogues) {
  ThreadTeam team(2);
  const QType t = QType::Q4_K;
  const int64_t n = 40, k = 512, m = 5;
  const auto g = test::pack_quant(t, n, k, test::random_quant_blocks(t, n, k, 20));
  const auto u = test::pack_quant(t, n, k, test::random_quant_blocks(t, n, k, 21));
  const auto x = test::random_normal(static_cast<size_t>(m * k), 22);
  const auto yg = run_gemm(g.pw, x, m, team, nullptr);
  const auto yu = run_gemm(u.pw, x, m, team, nullptr);
  std::vector<float> y(static_cast<size_t>(m * n)), want(y.size());
  GemmArgs a{.x = x.data(), .ldx = k, .m = m, .y = y.data(), .ldy = n};
  gemm_silu_mul(g.pw, u.pw, a, team);
  silu_mul(yg.data(), yu.data(), want.data(), static_cast<int64_t>(want.size()));
  EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * 4), 0);
  std::vector<float> base = test::random_normal(y.size(), 23);
  y = base;
  a.epilogue = Epilogue::Accumulate;
  gemm(g.pw, a, team);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], base[i] + yg[i]);
}

// The BF16-unpacking path: the weights widened to BF16 and the activations rounded to BF16.
TEST(QuantGemm, UnpackingToBf16MatchesTheF32Reference) {
  ThreadTeam team(2);
  for (QType t : {QType::Q4_0, QType::Q5_1, QType::Q6_K}) {
    const int64_t n = 100, k = 512, m = 33;
    const auto blocks = test::random_quant_blocks(t, n, k, 30);
    const auto q = test::pack_quant(t, n, k, blocks);
    const auto w = dequantized(t, n, k, blocks);
    const auto x = test::random_normal(static_cast<size_t>(m * k), 31);
    Schedule s = default_quant_schedule(QuantShape{m, n, k, t, 2});
    s.unpack_bf16 = true;
    s.bn = 64;  // two chunks, the second a tail
    EXPECT_NE(s.to_string().find("unpackbf16"), std::string::npos);
    EXPECT_TRUE(parse_schedule(s.to_string()).unpack_bf16);
    const auto y = run_gemm(q.pw, x, m, team, &s);
    std::vector<float> ref(y.size());
    gemm_ref(x.data(), k, w.data(), k, m, n, k, ref.data(), n);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double mag = 0;
        for (int64_t j = 0; j < k; ++j) mag += std::fabs(w[c * k + j] * x[r * k + j]);
        // Both operands rounded to BF16: 2^-8 each, relative to the magnitudes.
        EXPECT_NEAR(y[r * n + c], ref[r * n + c], 2 * 0.0079 * mag + 1e-6) << name(t);
      }
  }
}

TEST(QuantGemm, RefusesSchedulesItCannotRun) {
  ThreadTeam team(2);
  const auto q =
      test::pack_quant(QType::Q8_0, 16, 32, test::random_quant_blocks(QType::Q8_0, 16, 32, 1));
  const auto x = test::random_normal(32, 2);
  Schedule s = integer_schedule(Isa::Scalar, 5, 2);  // scalar tiles have at most 4 rows
  EXPECT_THROW(run_gemm(q.pw, x, 1, team, &s), std::invalid_argument);
  s = integer_schedule(Isa::Scalar, 1, 2, 64, 48);  // a K block must be whole blocks
  EXPECT_THROW(run_gemm(q.pw, x, 1, team, &s), std::invalid_argument);
  s = integer_schedule(Isa::Scalar, 1, 3);
  EXPECT_THROW(run_gemm(q.pw, x, 1, team, &s), std::invalid_argument);
  EXPECT_LE(static_cast<int>(quant_gemm_isa()), static_cast<int>(cpu_isa()));
}

}  // namespace
}  // namespace sandwich::kernels
