#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/attention.h"

namespace sandwich::kernels {
namespace {

struct Case {
  int n_kv_heads, group, head_dim, start_pos, n_tok;
};

class AttentionCases : public ::testing::TestWithParam<Case> {};

// Fills a paged cache with random K/V for positions [0, start_pos + n_tok) through a shuffled
// block table, then compares the fast kernel with the reference for every KV head.
TEST_P(AttentionCases, MatchesReference) {
  const Case c = GetParam();
  const int total = c.start_pos + c.n_tok;
  const int n_blocks = (total + kKVBlock - 1) / kKVBlock + 3;
  std::vector<float> storage(
      static_cast<size_t>(n_blocks * PagedKV::block_elements(c.n_kv_heads, c.head_dim)),
      std::nanf(""));  // unwritten slots must never be read
  PagedKV kv{storage.data(), PagedKV::block_elements(c.n_kv_heads, c.head_dim), c.n_kv_heads,
             c.head_dim};
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(c.head_dim * 131 + c.start_pos);
  std::shuffle(table.begin(), table.end(), rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(c.n_kv_heads * c.head_dim), v(k.size());
  for (int p = 0; p < total; ++p) {
    for (auto& x : k) x = nd(rng) * 2.0f;
    for (auto& x : v) x = nd(rng);
    kv_store(kv, table.data(), p, 0, c.n_kv_heads, k.data(), v.data());
  }
  const int64_t ld = int64_t{c.n_kv_heads} * c.group * c.head_dim;
  std::vector<float> q(c.n_tok * ld);
  for (auto& x : q) x = nd(rng);
  std::vector<float> out(q.size(), 0.0f), ref(q.size(), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (int h = 0; h < c.n_kv_heads; ++h) {
    const int64_t off = int64_t{h} * c.group * c.head_dim;
    attention(kv, table.data(), h, q.data() + off, ld, c.n_tok, c.group, c.start_pos, scale,
              out.data() + off, ld);
    attention_ref(kv, table.data(), h, q.data() + off, ld, c.n_tok, c.group, c.start_pos, scale,
                  ref.data() + off, ld);
  }
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], 2e-5f + 2e-5f * std::abs(ref[i])) << i;
  // Block sizes change the speed, never the bits: odd ones, tails of passes and steps, passes
  // longer than the call, steps longer than the context.
  const AttentionParams variants[] = {{1, 1}, {4, 2},  {8, 3},    {12, 1}, {16, 4},
                                      {5, 8}, {64, 7}, {256, 64}, {0, 0},  {1000, 1000}};
  for (const AttentionParams& p : variants) {
    std::vector<float> tuned(q.size(), -1.0f);
    for (int h = 0; h < c.n_kv_heads; ++h) {
      const int64_t off = int64_t{h} * c.group * c.head_dim;
      attention(kv, table.data(), h, q.data() + off, ld, c.n_tok, c.group, c.start_pos, scale,
                tuned.data() + off, ld, p);
    }
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(tuned[i]), std::bit_cast<uint32_t>(out[i]))
          << "pass_rows " << p.pass_rows << " kv_blocks " << p.kv_blocks << " at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionCases,
                         ::testing::Values(Case{1, 1, 8, 0, 1},      // first token
                                           Case{4, 2, 8, 0, 37},     // prefill, odd length, GQA
                                           Case{2, 4, 64, 40, 1},    // decode with GQA 4
                                           Case{1, 1, 64, 15, 2},    // crosses a block edge
                                           Case{8, 4, 128, 100, 5},  // Llama-3 head shape, chunked
                                           Case{2, 1, 34, 3, 20},  // head size not a multiple of 16
                                           Case{1, 3, 16, 200, 33},
                                           Case{1, 3, 80, 50,
                                                1},  // 3 rows, a second, partial 64-dim pass
                                           Case{2, 2, 130, 17, 3},  // 2-dim tail past two passes
                                           Case{1, 1, 64, 0, 70},   // MHA prefill, chunks of 4 rows
                                           Case{3, 5, 48, 7, 2},    // rows of a chunk span tokens
                                           Case{1, 2, 33, 5, 3},    // odd head size: the reference
                                           Case{2, 1, 2, 30, 4},    // the smallest head
                                           Case{1, 1, 64, 511, 1},  // decode, MHA, long context
                                           Case{2, 8, 128, 300, 1},   // decode, two tiles of rows
                                           Case{1, 2, 64, 0, 130}));  // prefill, passes' tails

TEST(Attention, SinglePositionReturnsItsValue) {
  const int hd = 16;
  std::vector<float> storage(PagedKV::block_elements(1, hd));
  PagedKV kv{storage.data(), PagedKV::block_elements(1, hd), 1, hd};
  std::vector<float> k(hd, 0.5f), v(hd);
  std::iota(v.begin(), v.end(), 1.0f);
  int32_t table[1] = {0};
  kv_store(kv, table, 0, 0, 1, k.data(), v.data());
  std::vector<float> q(hd, 1.0f), out(hd);
  attention(kv, table, 0, q.data(), hd, 1, 1, 0, 0.25f, out.data(), hd);
  for (int i = 0; i < hd; ++i) EXPECT_FLOAT_EQ(out[i], v[i]);
}

}  // namespace
}  // namespace sandwich::kernels
