// K shards of packed weights copied panel by panel (panel_slices.h): the copy, laid out as a
// matrix of its own, unpacks and multiplies as the shard of the whole matrix does, bit for bit,
// in every storage type; ranges that cut a K step or a block are refused.
#include <algorithm>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/gemm.h"
#include "kernels/panel_slices.h"
#include "random_quant_blocks.h"
#include "random_weights.h"

namespace sandwich::kernels {
namespace {

// A weight with its buffer: packed F32/BF16 or quantized.
struct Weight {
  std::vector<uint8_t> buf;
  PackedWeight pw;
};

Weight float_weight(int64_t n, int64_t k, DType dt) {
  test::RandomWeights r = test::random_weights(n, k, dt, 3);
  return {std::move(r.buf), r.pw};
}

Weight quant_weight(QType t, int64_t n, int64_t k) {
  test::QuantWeight q = test::pack_quant(t, n, k, test::random_quant_blocks(t, n, k, 4));
  return {std::move(q.raw), q.pw};
}

// K columns [k0, k1) of every panel of w, as a matrix of its own whose buffer's unused bytes
// (a quantized panel's padding to a cache line) are garbage, so that reading them shows.
Weight k_shard(const PackedWeight& w, int64_t k0, int64_t k1) {
  Weight s;
  s.pw = plan_packed_like(w, w.n, k1 - k0);
  s.buf.assign(s.pw.bytes + 64, 0xcd);
  s.pw.data = s.buf.data() + (64 - reinterpret_cast<uintptr_t>(s.buf.data()) % 64) % 64;
  for (int64_t p = 0; p < w.panels(); ++p) {
    const ByteRange from = panel_k_bytes(w, p, k0, k1);
    const ByteRange to = panel_k_bytes(s.pw, p, 0, s.pw.k);
    EXPECT_EQ(from.bytes, to.bytes);
    std::memcpy(static_cast<uint8_t*>(s.pw.data) + to.offset,
                static_cast<const uint8_t*>(w.data) + from.offset, from.bytes);
  }
  return s;
}

std::vector<float> multiply(const PackedWeight& w, const std::vector<float>& x, int64_t m,
                            int64_t k0, int64_t k1) {
  std::vector<float> y(static_cast<size_t>(m * w.n), -7.0f);
  GemmArgs a;
  a.x = x.data();
  a.ldx = k1 - k0;
  a.m = m;
  a.y = y.data();
  a.ldy = w.n;
  a.k0 = k0;
  a.k1 = k1;
  a.batch_invariant = true;  // the same K order whatever blocking each matrix's shape gives
  ThreadTeam team(2);
  gemm(w, a, team);
  return y;
}

void expect_shard_is_a_matrix(const PackedWeight& w, int64_t k0, int64_t k1,
                              const std::string& what) {
  SCOPED_TRACE(what + " K [" + std::to_string(k0) + ", " + std::to_string(k1) + ")");
  const Weight s = k_shard(w, k0, k1);
  std::vector<float> whole(static_cast<size_t>(w.k)), part(static_cast<size_t>(k1 - k0));
  for (int64_t r = 0; r < w.n; ++r) {
    unpack_row(w, r, whole.data());
    unpack_row(s.pw, r, part.data());
    ASSERT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + k0)) << "row " << r;
  }
  const int64_t m = 5;
  const std::vector<float> x = test::random_normal(static_cast<size_t>(m * (k1 - k0)), 11);
  EXPECT_EQ(multiply(s.pw, x, m, 0, k1 - k0), multiply(w, x, m, k0, k1));
}

TEST(PanelSlices, KShardCopiedPanelByPanelIsTheShardAsAMatrix) {
  // 70 rows: a last panel of padding rows. F32/BF16 K steps of 1 and 2 columns, an odd K.
  for (DType dt : {DType::F32, DType::BF16}) {
    const Weight w = float_weight(70, 197, dt);
    const std::string name(dtype_name(dt));
    expect_shard_is_a_matrix(w.pw, 0, 64, name);
    expect_shard_is_a_matrix(w.pw, 64, 128, name);
    expect_shard_is_a_matrix(w.pw, 128, 197, name);
  }
  // Blocks of 32 and 256 values, panel-blocks of sizes that are and are not whole cache lines.
  for (QType t : {QType::Q8_0, QType::Q4_0, QType::Q4_K, QType::Q6_K}) {
    const int64_t be = qtype_info(t).block_elems;
    const Weight w = quant_weight(t, 40, 5 * be);
    const std::string name(qtype_info(t).name);
    expect_shard_is_a_matrix(w.pw, 0, be, name);
    expect_shard_is_a_matrix(w.pw, be, 4 * be, name);
    expect_shard_is_a_matrix(w.pw, 3 * be, 5 * be, name);
  }
}

TEST(PanelSlices, KRangesOfAPanelTileItAndLayoutsAreTheLoaders) {
  const Weight bf16 = float_weight(70, 197, DType::BF16);
  EXPECT_EQ(panel_k_bytes(bf16.pw, 1, 0, 197),
            (ByteRange{bf16.pw.panel_bytes(), bf16.pw.panel_bytes()}));
  EXPECT_EQ(plan_packed_like(bf16.pw, 64, 96).bytes, plan_packed_weight(64, 96, DType::BF16).bytes);
  for (QType t : {QType::Q8_0, QType::Q6_K}) {
    const int64_t be = qtype_info(t).block_elems;
    const Weight w = quant_weight(t, 40, 5 * be);
    const ByteRange a = panel_k_bytes(w.pw, 2, 0, 2 * be),
                    b = panel_k_bytes(w.pw, 2, 2 * be, w.pw.k);
    EXPECT_EQ(a.offset, 2 * w.pw.panel_bytes());
    EXPECT_EQ(a.offset + a.bytes, b.offset);
    // What the panel holds, up to its padding to a cache line.
    EXPECT_LE(b.offset + b.bytes, 3 * w.pw.panel_bytes());
    EXPECT_GT(b.offset + b.bytes + 64, 3 * w.pw.panel_bytes());
    const PackedWeight like = plan_packed_like(w.pw, 16, be);
    EXPECT_EQ(like.qtype, t);
    EXPECT_EQ(like.bytes, plan_packed_weight_quant(16, be, t).bytes);
  }
}

TEST(PanelSlices, RangesThatCutAStepOrABlockAreRefused) {
  const Weight bf16 = float_weight(70, 197, DType::BF16);
  EXPECT_THROW(panel_k_bytes(bf16.pw, 0, 1, 64), std::invalid_argument);   // cuts a pair
  EXPECT_THROW(panel_k_bytes(bf16.pw, 0, 0, 63), std::invalid_argument);   // so does the end
  EXPECT_THROW(panel_k_bytes(bf16.pw, 2, 0, 64), std::invalid_argument);   // no panel 2
  EXPECT_THROW(panel_k_bytes(bf16.pw, 0, 64, 64), std::invalid_argument);  // empty
  const Weight q = quant_weight(QType::Q4_K, 40, 512);
  EXPECT_THROW(panel_k_bytes(q.pw, 0, 128, 512), std::invalid_argument);
  EXPECT_THROW(panel_k_bytes(q.pw, 0, 0, 384), std::invalid_argument);
  EXPECT_THROW(panel_k_bytes(q.pw, 0, 0, 768), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::kernels
