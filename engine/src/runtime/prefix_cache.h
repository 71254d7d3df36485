#pragma once
// Automatic prefix caching, as vLLM's and llama-server's: a full KV block is known by a hash
// chain of its token prefix, so a request whose tokens start with blocks already computed takes
// references on them and prefills only the rest. Blocks that no sequence holds stay cached, the
// least recently used going first, until the free list is empty and a block is needed.
// Bookkeeping only, on the scheduler's thread: the blocks are the KV cache's, in shared memory,
// so the ranks of any service configuration read a shared block as they read any other.
#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runtime/kv_cache.h"

namespace sandwich::engine {

// One sequence's full blocks as the cache knows them.
struct PrefixChain {
  std::vector<uint64_t> hashes;  // the chain hash of each full block of tokens, as far as needed
  // Per block matched or registered: the identity of that block's registration. A block matches
  // only under the registration matched one level up (and with equal tokens), so a hash
  // collision can never hand out another prefix's KV.
  std::vector<uint64_t> ids;
};

// The hash of a block from its parent's hash and its kBlockTokens tokens.
using BlockHasher = uint64_t (*)(uint64_t parent, std::span<const int32_t> tokens);
uint64_t strong_block_hash(uint64_t parent, std::span<const int32_t> tokens);

class PrefixCache {
 public:
  // Disabled, it is the KV cache's free list and nothing more. `hasher` is a seam for tests
  // (collisions on purpose).
  PrefixCache(KVCache& kv, bool enabled, BlockHasher hasher = strong_block_hash);

  bool enabled() const { return enabled_; }

  // Takes references on the longest run of cached full blocks that starts `tokens`, leaving at
  // least the last token to compute (its logits are needed), and appends them to `table`, which
  // must be empty. Returns the tokens they hold.
  int32_t acquire(std::span<const int32_t> tokens, PrefixChain& chain, std::vector<int32_t>& table);
  // Grows `table` to cover `tokens` positions with fresh blocks, evicting the least recently used
  // cached blocks when the free list runs out; false (nothing changed) if there are too few.
  bool reserve(std::vector<int32_t>& table, int64_t tokens);
  // Drops the table's references and clears it. Registered blocks left unreferenced stay cached;
  // a table's last blocks go first (they are the least likely to be shared).
  void release(std::vector<int32_t>& table, PrefixChain& chain);
  // Registers the table's blocks filled by the first `n_computed` tokens (their KV is written).
  void commit(std::span<const int32_t> tokens, int32_t n_computed, std::span<const int32_t> table,
              PrefixChain& chain);

  int32_t used_blocks() const;                         // held by sequences
  int32_t cached_blocks() const { return lru_size_; }  // cached, held by none: evictable
  int32_t free_blocks() const { return kv_.free_blocks(); }
  // Test hook: the cached blocks, least recently used first.
  std::vector<int32_t> eviction_order() const;

 private:
  static constexpr int32_t B = KVCache::kBlockTokens;
  struct Block {
    int32_t ref = 0;
    uint64_t id = 0;  // 0: not registered
    uint64_t hash = 0, parent = 0;
    std::array<int32_t, KVCache::kBlockTokens> tokens{};
    int32_t prev = -1, next = -1;  // LRU links while evictable
  };

  void extend_hashes(std::span<const int32_t> tokens, size_t blocks, PrefixChain& chain) const;
  // The registered block holding these tokens under this parent registration, or -1.
  int32_t find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const;
  void lru_push(int32_t b);
  void lru_remove(int32_t b);
  void evict(int32_t b);

  KVCache& kv_;
  const bool enabled_;
  const BlockHasher hasher_;
  std::vector<Block> blocks_;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  int32_t lru_head_ = -1, lru_tail_ = -1, lru_size_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace sandwich::engine
