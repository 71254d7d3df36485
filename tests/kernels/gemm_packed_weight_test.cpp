// Packing weights into panels: layout, conversions, row maps, row blocks and shard granularity.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

struct Buffer {
  std::vector<uint8_t> raw;
  void* p;
  explicit Buffer(size_t n) : raw(n + 64, 0xcd) {
    p = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
  }
};

std::vector<float> values(int64_t n, int64_t k, uint32_t seed) {
  // Exact in every storage type used: BF16 values, kept out of F16's subnormal range.
  auto v = test::random_normal(static_cast<size_t>(n * k), seed, 1.0f, true);
  for (auto& x : v)
    if (std::fabs(x) < 1e-3f) x = 0.0f;
  return v;
}

TEST(PackedWeight, PlansWholePanelsOfPaddedK) {
  const PackedWeight f = plan_packed_weight(100, 77, DType::F32);
  EXPECT_EQ(f.panel, kPanel);
  EXPECT_EQ(f.panels(), 2);
  EXPECT_EQ(f.bytes, size_t{2} * 64 * 77 * 4);
  const PackedWeight b = plan_packed_weight(100, 77, DType::BF16);
  EXPECT_EQ(b.k_padded(), 78);
  EXPECT_EQ(b.bytes, size_t{2} * 64 * 78 * 2);
  EXPECT_EQ(b.panel_bytes() % 64, 0u);  // panels start on cache lines
  EXPECT_EQ(shard_granularity_n(b), 64);
  EXPECT_EQ(shard_granularity_k(b), 2);
  EXPECT_EQ(shard_granularity_k(f), 1);
  EXPECT_THROW(plan_packed_weight(0, 5, DType::F32), std::invalid_argument);
  EXPECT_THROW(plan_packed_weight(5, 5, DType::F16), std::invalid_argument);
}

TEST(PackedWeight, LayoutIsPanelsOfKStepRows) {
  const int64_t n = 70, k = 5;
  const auto w = values(n, k, 1);
  for (DType dt : {DType::F32, DType::BF16}) {
    PackedWeight pw = plan_packed_weight(n, k, dt);
    Buffer buf(pw.bytes);
    pw.data = buf.p;
    pack_weight(pw, w.data(), DType::F32, k);
    const int g = k_group(dt);
    for (int64_t r = 0; r < pw.panels() * kPanel; ++r)
      for (int64_t c = 0; c < pw.k_padded(); ++c) {
        const int64_t p = r / kPanel, col = r % kPanel;
        const size_t idx = static_cast<size_t>(p) * kPanel * pw.k_padded() + (c / g) * kPanel * g +
                           col * g + c % g;
        const float got = dt == DType::BF16 ? bf16_to_f32(static_cast<const bf16_t*>(pw.data)[idx])
                                            : static_cast<const float*>(pw.data)[idx];
        ASSERT_EQ(got, r < n && c < k ? w[r * k + c] : 0.0f)
            << dtype_name(dt) << " " << r << "," << c;
      }
  }
}

TEST(PackedWeight, UnpacksExactlyFromEverySourceType) {
  const int64_t n = 150, k = 300;
  const auto w = values(n, k, 11);
  for (DType dt : {DType::F32, DType::BF16})
    for (DType src : {DType::F32, DType::F16, DType::BF16})
      for (int threads : {1, 2}) {
        // Sources with a row stride wider than k.
        const int64_t stride = k + 3;
        std::vector<uint8_t> s(static_cast<size_t>(n * stride) * dtype_size(src));
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < k; ++c)
            store_from_f32(s.data(), static_cast<size_t>(r * stride + c), src, w[r * k + c]);
        PackedWeight pw = plan_packed_weight(n, k, dt);
        Buffer buf(pw.bytes);
        pw.data = buf.p;
        ThreadTeam team(threads);
        pack_weight(pw, s.data(), src, stride, nullptr, &team);
        std::vector<float> row(k);
        for (int64_t r = 0; r < n; ++r) {
          unpack_row(pw, r, row.data());
          for (int64_t j = 0; j < k; ++j)
            ASSERT_EQ(row[j], load_as_f32(s.data(), static_cast<size_t>(r * stride + j), src))
                << dtype_name(dt) << " from " << dtype_name(src) << " " << r << "," << j;
        }
      }
}

TEST(PackedWeight, RowMapReordersRows) {
  const int64_t n = 130, k = 9;
  const auto w = values(n, k, 5);
  std::vector<int64_t> map(n);
  for (int64_t r = 0; r < n; ++r) map[r] = n - 1 - r;
  PackedWeight pw = plan_packed_weight(n, k, DType::BF16);
  Buffer buf(pw.bytes);
  pw.data = buf.p;
  pack_weight(pw, w.data(), DType::F32, k, map.data());
  std::vector<float> row(k);
  for (int64_t r = 0; r < n; ++r) {
    unpack_row(pw, r, row.data());
    for (int64_t j = 0; j < k; ++j) ASSERT_EQ(row[j], w[map[r] * k + j]);
  }
}

TEST(PackedWeight, RowBlocksGiveTheSameBytes) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const int64_t n = 150, k = 77;
    const auto w = values(n, k, 11);
    PackedWeight a = plan_packed_weight(n, k, dt), b = a;
    Buffer ba(a.bytes), bb(b.bytes);
    a.data = ba.p;
    b.data = bb.p;
    pack_weight(a, w.data(), DType::F32, k);
    pack_weight_rows(b, w.data(), DType::F32, k, 0, 128);
    pack_weight_rows(b, w.data() + 128 * k, DType::F32, k, 128, n);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.bytes), 0);
    EXPECT_THROW(pack_weight_rows(b, w.data(), DType::F32, k, 10, 64), std::invalid_argument);
  }
}

}  // namespace
}  // namespace sandwich::kernels
