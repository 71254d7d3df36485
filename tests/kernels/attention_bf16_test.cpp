// A BF16 paged KV cache: kv_store rounds to nearest even, and attention over it returns the bits
// that attention over an F32 cache of the rounded values returns (every body, every block size).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/attention.h"

namespace sandwich::kernels {
namespace {

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

// One layer of n_blocks blocks of either type, every element NaN until written (unwritten slots
// must never be read).
struct Cache {
  std::vector<float> f32;
  std::vector<bf16_t> bf16;
  PagedKV kv;
  Cache(DType t, int n_blocks, int n_kv_heads, int head_dim) {
    const int64_t n = n_blocks * PagedKV::block_elements(n_kv_heads, head_dim);
    if (t == DType::F32) {
      f32.assign(static_cast<size_t>(n), std::nanf(""));
      kv = {f32.data(), PagedKV::block_elements(n_kv_heads, head_dim), n_kv_heads, head_dim, t};
    } else {
      bf16.assign(static_cast<size_t>(n), f32_to_bf16(std::nanf("")));
      kv = {bf16.data(), PagedKV::block_elements(n_kv_heads, head_dim), n_kv_heads, head_dim, t};
    }
  }
};

TEST(AttentionBf16, KvStoreRoundsToNearestEven) {
  const int hd = 10;
  Cache c(DType::BF16, 1, 1, hd);
  const float inf = std::numeric_limits<float>::infinity();
  // Ties go to the even mantissa; past the largest bf16 is infinity; NaN stays NaN.
  const float k[hd] = {1.0f,
                       1.0f + 0x1p-8f,             // tie, even below: 1.0
                       1.0f + 0x3p-8f,             // tie, even above: 1 + 2^-6
                       1.0f + 0x1p-8f + 0x1p-20f,  // past the tie: up
                       -0.0f,
                       inf,
                       3.4e38f,    // rounds past the largest bf16
                       0x1p-130f,  // subnormal
                       std::nanf(""),
                       -2.5f};
  const uint16_t want[hd] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x8000,
                             0x7f80, 0x7f80, 0x0008, 0,      0xc020};
  float v[hd];
  for (int d = 0; d < hd; ++d) v[d] = -k[d];
  const int32_t table[1] = {0};
  const int32_t slot = 5;
  kv_store(c.kv, table, slot, 0, 1, k, v);
  for (int d = 0; d < hd; ++d) {
    const bf16_t kb = c.kv.key<bf16_t>(0, 0)[int64_t{d} * kKVBlock + slot];
    const bf16_t vb = c.kv.value<bf16_t>(0, 0)[int64_t{slot} * hd + d];
    EXPECT_EQ(kb, f32_to_bf16(k[d])) << d;
    EXPECT_EQ(vb, f32_to_bf16(v[d])) << d;
    if (std::isnan(k[d])) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(kb)));
      EXPECT_TRUE(std::isnan(bf16_to_f32(vb)));
    } else {
      EXPECT_EQ(kb, want[d]) << d;
      EXPECT_EQ(vb, want[d] ^ 0x8000) << d;
    }
  }
  // Other slots are untouched.
  EXPECT_TRUE(std::isnan(bf16_to_f32(c.kv.key<bf16_t>(0, 0)[slot + 1])));
}

TEST(AttentionBf16, OtherElementTypesAreRefused) {
  std::vector<uint16_t> storage(PagedKV::block_elements(1, 16));
  const PagedKV kv{storage.data(), PagedKV::block_elements(1, 16), 1, 16, DType::F16};
  const int32_t table[1] = {0};
  std::vector<float> x(16, 1.0f), out(16);
  EXPECT_THROW(kv_store(kv, table, 0, 0, 1, x.data(), x.data()), std::invalid_argument);
  EXPECT_THROW(attention(kv, table, 0, x.data(), 16, 1, 1, 0, 1.0f, out.data(), 16),
               std::invalid_argument);
  EXPECT_THROW(attention_ref(kv, table, 0, x.data(), 16, 1, 1, 0, 1.0f, out.data(), 16),
               std::invalid_argument);
}

struct Case {
  int n_kv_heads, group, head_dim, start_pos, n_tok;
};

class AttentionBf16Cases : public ::testing::TestWithParam<Case> {};

// The same random K/V (rounded to bf16 first) in a BF16 cache and an F32 cache on the same
// shuffled block table; every query through both.
TEST_P(AttentionBf16Cases, EqualsF32OverRoundedValues) {
  const Case c = GetParam();
  const int total = c.start_pos + c.n_tok;
  const int n_blocks = (total + kKVBlock - 1) / kKVBlock + 2;
  Cache bf(DType::BF16, n_blocks, c.n_kv_heads, c.head_dim);
  Cache f32(DType::F32, n_blocks, c.n_kv_heads, c.head_dim);
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(c.head_dim * 977 + c.start_pos * 3 + c.n_tok);
  std::shuffle(table.begin(), table.end(), rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(c.n_kv_heads * c.head_dim), v(k.size()), kr(k.size()), vr(k.size());
  for (int p = 0; p < total; ++p) {
    for (auto& x : k) x = nd(rng) * 2.0f;
    for (auto& x : v) x = nd(rng);
    for (size_t i = 0; i < k.size(); ++i) {
      kr[i] = bf16_to_f32(f32_to_bf16(k[i]));
      vr[i] = bf16_to_f32(f32_to_bf16(v[i]));
    }
    kv_store(bf.kv, table.data(), p, 0, c.n_kv_heads, k.data(), v.data());
    kv_store(f32.kv, table.data(), p, 0, c.n_kv_heads, kr.data(), vr.data());
  }
  const int64_t ld = int64_t{c.n_kv_heads} * c.group * c.head_dim;
  std::vector<float> q(c.n_tok * ld);
  for (auto& x : q) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  auto run = [&](const PagedKV& kv, const AttentionParams* p) {
    std::vector<float> out(q.size(), -1.0f);
    for (int h = 0; h < c.n_kv_heads; ++h) {
      const int64_t off = int64_t{h} * c.group * c.head_dim;
      if (p)
        attention(kv, table.data(), h, q.data() + off, ld, c.n_tok, c.group, c.start_pos, scale,
                  out.data() + off, ld, *p);
      else
        attention_ref(kv, table.data(), h, q.data() + off, ld, c.n_tok, c.group, c.start_pos, scale,
                      out.data() + off, ld);
    }
    return out;
  };
  const std::vector<float> ref = run(bf.kv, nullptr), ref_f32 = run(f32.kv, nullptr);
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(bits(ref[i]), bits(ref_f32[i])) << i;
  const AttentionParams variants[] = {{},     {1, 1},  {4, 2},  {8, 3},    {12, 1},
                                      {5, 8}, {16, 4}, {64, 7}, {256, 64}, {1000, 1000}};
  std::vector<float> first;
  for (const AttentionParams& p : variants) {
    const std::vector<float> out = run(bf.kv, &p), out_f32 = run(f32.kv, &p);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(bits(out[i]), bits(out_f32[i]))
          << "pass_rows " << p.pass_rows << " kv_blocks " << p.kv_blocks << " at " << i;
      // The vector body against the scalar reference, as for F32 (attention_test.cpp).
      ASSERT_NEAR(out[i], ref[i], 2e-5f + 2e-5f * std::abs(ref[i])) << i;
    }
    // Block sizes change the speed, never the bits.
    if (first.empty()) first = out;
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(bits(out[i]), bits(first[i]))
          << "pass_rows " << p.pass_rows << " kv_blocks " << p.kv_blocks << " at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionBf16Cases,
                         ::testing::Values(Case{1, 1, 8, 0, 1},       // first token
                                           Case{4, 2, 8, 0, 37},      // prefill, odd length, GQA
                                           Case{2, 4, 64, 40, 1},     // decode with GQA 4
                                           Case{1, 1, 64, 15, 2},     // crosses a block edge
                                           Case{8, 4, 128, 100, 5},   // Llama-3 head shape
                                           Case{2, 1, 34, 3, 20},     // head size not 16k
                                           Case{1, 3, 80, 50, 1},     // partial 64-dim pass
                                           Case{2, 2, 130, 17, 3},    // 2-dim tail
                                           Case{1, 2, 33, 5, 3},      // odd head: the reference
                                           Case{1, 1, 35, 31, 1},     // odd head, decode
                                           Case{2, 1, 2, 30, 4},      // the smallest head
                                           Case{1, 1, 64, 511, 1},    // decode, long context
                                           Case{2, 8, 128, 300, 1},   // decode, two tiles
                                           Case{1, 2, 64, 0, 130}));  // prefill, passes' tails

}  // namespace
}  // namespace sandwich::kernels
