// Every vector body of attention this CPU runs (AVX-512, AVX2), called through its table, against
// the scalar reference, whatever SANDWICH_ISA picks for attention() itself: F32 and BF16 caches,
// one query row and odd ones, head sizes with tails, contexts off the block size. A body's bits
// must also not depend on the block sizes.
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attention_kernels.h"
#include "kernels/attention.h"

namespace sandwich::kernels {
namespace {

struct Shape {
  int n_kv_heads, group, head_dim, start_pos, n_tok;
};

struct Case {
  const AttentionKernels* body;
  DType dtype;
  Shape s;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(isa_name(c.body->isa)) + "_" + std::string(dtype_name(c.dtype)) + "_h" +
         std::to_string(c.s.n_kv_heads) + "g" + std::to_string(c.s.group) + "d" +
         std::to_string(c.s.head_dim) + "p" + std::to_string(c.s.start_pos) + "t" +
         std::to_string(c.s.n_tok);
}

class AttentionBodies : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionBodies, MatchReference) {
  const Case c = GetParam();
  if (!cpu_has(c.body->isa)) GTEST_SKIP() << "no " << isa_name(c.body->isa) << " here";
  const Shape& s = c.s;
  ASSERT_TRUE(c.body->fits(s.head_dim));
  const int total = s.start_pos + s.n_tok;
  const int n_blocks = (total + kKVBlock - 1) / kKVBlock + 2;
  const int64_t block = PagedKV::block_elements(s.n_kv_heads, s.head_dim);
  // NaN in every slot never written: a body must not read past a row's visible positions.
  std::vector<float> f32(static_cast<size_t>(n_blocks * block), std::nanf(""));
  std::vector<bf16_t> bf(f32.size(), f32_to_bf16(std::nanf("")));
  PagedKV kv{c.dtype == DType::BF16 ? static_cast<void*>(bf.data()) : f32.data(), block,
             s.n_kv_heads, s.head_dim, c.dtype};
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(s.head_dim * 31 + s.start_pos * 7 + s.n_tok);
  std::shuffle(table.begin(), table.end(), rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
  for (int p = 0; p < total; ++p) {
    for (auto& x : k) x = nd(rng) * 2.0f;
    for (auto& x : v) x = nd(rng);
    kv_store(kv, table.data(), p, 0, s.n_kv_heads, k.data(), v.data());
  }
  const int64_t ld = int64_t{s.n_kv_heads} * s.group * s.head_dim;
  std::vector<float> q(s.n_tok * ld);
  for (auto& x : q) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  auto run = [&](const AttentionKernels& body, const AttentionParams& p) {
    std::vector<float> out(q.size(), -1.0f);
    for (int h = 0; h < s.n_kv_heads; ++h) {
      const int64_t off = int64_t{h} * s.group * s.head_dim;
      body.run(kv, table.data(), h, q.data() + off, ld, s.n_tok, s.group, s.start_pos, scale,
               out.data() + off, ld, p);
    }
    return out;
  };
  const std::vector<float> ref = run(kAttentionScalar, {});
  const std::vector<float> out = run(*c.body, {});
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], 2e-5f + 2e-5f * std::abs(ref[i])) << i;
  const AttentionParams variants[] = {{1, 1}, {4, 2}, {8, 3}, {5, 8}, {64, 7}, {256, 64}};
  for (const AttentionParams& p : variants) {
    const std::vector<float> tuned = run(*c.body, p);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(tuned[i]), std::bit_cast<uint32_t>(out[i]))
          << "pass_rows " << p.pass_rows << " kv_blocks " << p.kv_blocks << " at " << i;
  }
}

std::vector<Case> cases() {
  const Shape shapes[] = {
      {1, 1, 8, 0, 1},       // the first token: one row, one position
      {1, 1, 128, 4094, 1},  // decode, MHA, a context one short of a whole block
      {2, 4, 64, 40, 1},     // decode, GQA 4: a full tile of rows
      {2, 3, 96, 16, 1},     // decode, 3 rows, a context of exactly one block plus one
      {4, 2, 8, 0, 37},      // prefill, odd length
      {1, 1, 64, 15, 2},     // crosses a block edge
      {2, 1, 34, 3, 20},     // head size with a 2-dim tail of the 16- and 32-dim chunks
      {1, 3, 80, 50, 1},     // 3 rows, a partial last chunk
      {2, 2, 130, 17, 3},    // 2-dim tail past whole chunks
      {3, 5, 48, 7, 2},      // a tile's rows span tokens
      {2, 1, 2, 30, 4},      // the smallest head
      {1, 2, 6, 9, 5},       // head smaller than one vector
      {1, 1, 1024, 33, 2},   // the largest head
      {1, 2, 64, 0, 130},    // prefill, the passes' tails
  };
  std::vector<Case> out;
  for (const AttentionKernels* body : {&kAttentionAvx512, &kAttentionAvx2})
    for (DType t : {DType::F32, DType::BF16})
      for (const Shape& s : shapes) out.push_back({body, t, s});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionBodies, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace sandwich::kernels
