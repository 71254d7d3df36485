// The prefix cache's bookkeeping on its own (prefix_cache.h): the hash chain, hits and misses,
// reference counts, the eviction order, the token that is always left to compute, and hash
// collisions that must never hand out another prefix's blocks.
#include "runtime/prefix_cache.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace sandwich::engine {
namespace {

constexpr int32_t B = KVCache::kBlockTokens;

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layers = 1;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  return c;
}

// `n` tokens from `first` on.
std::vector<int32_t> tokens(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A sequence as the scheduler keeps one: its tokens, block table and chain.
struct Seq {
  std::vector<int32_t> tokens;
  std::vector<int32_t> table;
  PrefixChain chain;
};

class PrefixCacheTest : public ::testing::Test {
 protected:
  explicit PrefixCacheTest(int32_t blocks = 8)
      : kv(tiny_config(), static_cast<size_t>(blocks) * KVCache::block_bytes(tiny_config())) {}

  // Admits a sequence as the scheduler does: cached blocks first, fresh ones for the rest
  // (and one more position); then "computes" all but the last token and registers the blocks.
  // Returns the tokens found cached, or -1 if it did not fit.
  int32_t run(PrefixCache& pc, Seq& s) {
    const int32_t hit = pc.acquire(s.tokens, s.chain, s.table);
    if (!pc.reserve(s.table, static_cast<int64_t>(s.tokens.size()) + 1)) {
      pc.release(s.table, s.chain);
      return -1;
    }
    pc.commit(s.tokens, static_cast<int32_t>(s.tokens.size()), s.table, s.chain);
    return hit;
  }

  KVCache kv;
};

TEST(PrefixHash, ChainsThroughTheParentAndSeesEveryToken) {
  const auto a = tokens(100, B);
  const uint64_t h = strong_block_hash(0, a);
  EXPECT_EQ(strong_block_hash(0, a), h);
  EXPECT_NE(strong_block_hash(1, a), h) << "the parent is part of the hash";
  for (int i = 0; i < B; ++i) {
    auto b = a;
    b[static_cast<size_t>(i)] += 1;
    EXPECT_NE(strong_block_hash(0, b), h) << "token " << i;
  }
  auto swapped = a;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(strong_block_hash(0, swapped), h) << "order matters";
}

TEST_F(PrefixCacheTest, ASecondSequenceFindsTheFullBlocksOfTheFirst) {
  PrefixCache pc(kv, true);
  Seq a{concat(tokens(100, 2 * B), tokens(500, 5))};
  ASSERT_EQ(run(pc, a), 0);
  EXPECT_EQ(a.chain.ids.size(), 2u) << "two full blocks registered, the partial one not";
  Seq b{concat(tokens(100, 2 * B), tokens(600, 7))};
  ASSERT_EQ(run(pc, b), 2 * B);
  EXPECT_EQ(b.table[0], a.table[0]);
  EXPECT_EQ(b.table[1], a.table[1]);
  EXPECT_NE(b.table[2], a.table[2]);
  EXPECT_EQ(pc.used_blocks(), 4) << "2 shared + a's third + b's third";
  // Diverging inside the second block: only the first is shared.
  Seq c{concat(tokens(100, B + 3), tokens(700, 20))};
  EXPECT_EQ(run(pc, c), B);
  pc.release(c.table, c.chain);
  // A different first block: nothing, even though later blocks repeat a's.
  Seq d{concat(tokens(900, B), tokens(100 + B, B + 1))};
  EXPECT_EQ(run(pc, d), 0);
}

TEST_F(PrefixCacheTest, TheLastTokenIsAlwaysLeftToCompute) {
  PrefixCache pc(kv, true);
  Seq a{tokens(100, 2 * B)};
  ASSERT_EQ(run(pc, a), 0);
  pc.release(a.table, a.chain);
  // The same prompt again: both blocks are cached, but the last token must run for its logits,
  // so only the first block is taken.
  Seq again{tokens(100, 2 * B)};
  EXPECT_EQ(run(pc, again), B);
  pc.release(again.table, again.chain);
  Seq longer{tokens(100, 2 * B + 1)};
  EXPECT_EQ(run(pc, longer), 2 * B);
  pc.release(longer.table, longer.chain);
  Seq one{tokens(100, 1)};
  EXPECT_EQ(run(pc, one), 0);
}

TEST_F(PrefixCacheTest, ReferencesKeepBlocksAndUnreferencedOnesStayCached) {
  PrefixCache pc(kv, true);
  Seq a{tokens(100, 3 * B)};
  ASSERT_EQ(run(pc, a), 0);  // 4 blocks: 3 full, 1 for the next position
  Seq b{tokens(100, 3 * B + 1)};
  ASSERT_EQ(run(pc, b), 3 * B);
  EXPECT_EQ(pc.used_blocks(), 5);
  pc.release(a.table, a.chain);
  EXPECT_EQ(pc.used_blocks(), 4) << "b still holds the shared blocks";
  EXPECT_EQ(pc.cached_blocks(), 0);
  EXPECT_EQ(pc.free_blocks(), 4);  // a's unregistered last block went back to the free list
  pc.release(b.table, b.chain);
  EXPECT_EQ(pc.used_blocks(), 0);
  EXPECT_EQ(pc.cached_blocks(), 3);
  EXPECT_EQ(pc.cached_blocks() + pc.free_blocks(), kv.num_blocks());
  Seq c{tokens(100, 3 * B + 5)};
  EXPECT_EQ(run(pc, c), 3 * B) << "unreferenced blocks still hit";
  EXPECT_EQ(pc.cached_blocks(), 0);
}

TEST_F(PrefixCacheTest, TheLeastRecentlyUsedBlocksAreEvictedWhenTheFreeListIsEmpty) {
  PrefixCache pc(kv, true);  // 8 blocks
  Seq a{tokens(100, 2 * B)}, b{tokens(300, 2 * B)};
  ASSERT_EQ(run(pc, a), 0);  // blocks a0 a1 + 1
  ASSERT_EQ(run(pc, b), 0);  // blocks b0 b1 + 1
  const auto a_blocks = a.table, b_blocks = b.table;
  pc.release(a.table, a.chain);
  pc.release(b.table, b.chain);
  // A sequence's last block first, then a's before b's (a was released first).
  EXPECT_EQ(pc.eviction_order(),
            (std::vector<int32_t>{a_blocks[1], a_blocks[0], b_blocks[1], b_blocks[0]}));
  // Using a's prefix makes it the most recent.
  Seq a2{tokens(100, B + 1)};
  ASSERT_EQ(run(pc, a2), B);
  pc.release(a2.table, a2.chain);
  EXPECT_EQ(pc.eviction_order().back(), a_blocks[0]);
  ASSERT_EQ(pc.free_blocks(), 4);
  // 6 blocks needed, 4 free: the two least recently used cached blocks go.
  Seq big{tokens(1000, 5 * B + 3)};
  ASSERT_EQ(run(pc, big), 0);
  EXPECT_EQ(pc.cached_blocks(), 2);
  EXPECT_EQ(pc.eviction_order(), (std::vector<int32_t>{b_blocks[0], a_blocks[0]}));
  // An evicted block no longer hits, and cuts the chain below it.
  Seq b2{tokens(300, 2 * B + 1)};
  EXPECT_EQ(pc.acquire(b2.tokens, b2.chain, b2.table), B);
  pc.release(b2.table, b2.chain);
  Seq a3{tokens(100, 2 * B + 1)};
  EXPECT_EQ(pc.acquire(a3.tokens, a3.chain, a3.table), B);
  pc.release(a3.table, a3.chain);
}

TEST_F(PrefixCacheTest, ReserveFailsWithoutChangesWhenFreeAndCachedBlocksAreTooFew) {
  PrefixCache pc(kv, true);  // 8 blocks
  Seq a{tokens(100, 3 * B)};
  ASSERT_EQ(run(pc, a), 0);  // 4 held
  std::vector<int32_t> table;
  EXPECT_FALSE(pc.reserve(table, 5 * B));
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(pc.used_blocks(), 4);
  pc.release(a.table, a.chain);  // 3 cached + 5 free
  EXPECT_TRUE(pc.reserve(table, 8 * B)) << "cached blocks count as room";
  EXPECT_EQ(pc.cached_blocks(), 0);
  EXPECT_FALSE(pc.reserve(table, 9 * B));
  PrefixChain none;
  pc.release(table, none);
  EXPECT_EQ(pc.free_blocks(), kv.num_blocks());
}

TEST_F(PrefixCacheTest, ASequenceComputingACachedPrefixAgainKeepsItsOwnCopy) {
  PrefixCache pc(kv, true);
  // Two sequences with the same prompt admitted together: neither finds the other's blocks
  // (nothing is computed yet); the second to register finds the first's registration and its
  // own copy is freed, not cached, when it ends.
  Seq a{tokens(100, 2 * B)}, b{tokens(100, 2 * B)};
  ASSERT_EQ(pc.acquire(a.tokens, a.chain, a.table), 0);
  ASSERT_EQ(pc.acquire(b.tokens, b.chain, b.table), 0);
  ASSERT_TRUE(pc.reserve(a.table, 2 * B + 1));
  ASSERT_TRUE(pc.reserve(b.table, 2 * B + 1));
  pc.commit(a.tokens, 2 * B, a.table, a.chain);
  pc.commit(b.tokens, 2 * B, b.table, b.chain);
  EXPECT_EQ(a.chain.ids, b.chain.ids);
  pc.release(b.table, b.chain);
  EXPECT_EQ(pc.cached_blocks(), 0);
  pc.release(a.table, a.chain);
  EXPECT_EQ(pc.cached_blocks(), 2);
  EXPECT_EQ(pc.free_blocks() + pc.cached_blocks(), kv.num_blocks());
}

// Every block hashes alike: each lookup must tell prefixes apart by their tokens and parents.
uint64_t colliding_hash(uint64_t, std::span<const int32_t>) {
  return 42;
}

TEST_F(PrefixCacheTest, HashCollisionsNeverHandOutAnotherPrefixsBlocks) {
  PrefixCache pc(kv, true, colliding_hash);
  Seq a{concat(tokens(100, B), tokens(200, B + 1))};
  ASSERT_EQ(run(pc, a), 0);
  // Same hashes, different first block.
  Seq b{concat(tokens(101, B), tokens(200, B + 1))};
  EXPECT_EQ(run(pc, b), 0);
  // Same second block's tokens as a's but under b's first block: its parent is b's, not a's.
  Seq b2{concat(tokens(101, B), tokens(200, B + 1))};
  EXPECT_EQ(run(pc, b2), 2 * B);
  EXPECT_EQ(b2.table[0], b.table[0]);
  EXPECT_EQ(b2.table[1], b.table[1]);
  pc.release(b2.table, b2.chain);
  Seq a2{concat(tokens(100, B), tokens(200, B + 1))};
  EXPECT_EQ(run(pc, a2), 2 * B);
  EXPECT_EQ(a2.table[0], a.table[0]);
  EXPECT_EQ(a2.table[1], a.table[1]);
  pc.release(a2.table, a2.chain);
  // A second block that differs from every cached one in its last token only.
  Seq c{concat(tokens(100, B), tokens(200, B - 1))};
  c.tokens.push_back(7);
  c.tokens.push_back(8);
  EXPECT_EQ(run(pc, c), B);
}

TEST_F(PrefixCacheTest, DisabledItIsTheFreeListAlone) {
  PrefixCache pc(kv, false);
  Seq a{tokens(100, 3 * B)};
  ASSERT_EQ(run(pc, a), 0);
  pc.release(a.table, a.chain);
  Seq b{tokens(100, 3 * B)};
  EXPECT_EQ(run(pc, b), 0);
  EXPECT_EQ(pc.cached_blocks(), 0);
  pc.release(b.table, b.chain);
  EXPECT_EQ(pc.free_blocks(), kv.num_blocks());
}

}  // namespace
}  // namespace sandwich::engine
