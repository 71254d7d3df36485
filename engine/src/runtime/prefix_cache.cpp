#include "runtime/prefix_cache.h"

#include <algorithm>
#include <stdexcept>

namespace sandwich::engine {
namespace {

// SplitMix64's finalizer: a bijection of 64-bit words in which every input bit flips about half
// of the output bits.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr uint64_t kRoot = 0x6a09e667f3bcc909ull;  // the parent hash of a sequence's first block

}  // namespace

// Two tokens per 64-bit word, each word folded into the state through the bijection: equal
// states after different words are impossible, so colliding chains need a full 64-bit collision.
// A collision costs at most a missed hit: matches also compare tokens and parents.
uint64_t strong_block_hash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ kRoot);
  for (size_t i = 0; i < tokens.size(); i += 2) {
    const uint64_t lo = static_cast<uint32_t>(tokens[i]);
    const uint64_t hi = i + 1 < tokens.size() ? static_cast<uint32_t>(tokens[i + 1]) : 0;
    h = mix(h ^ (lo | hi << 32));
  }
  return mix(h + tokens.size());
}

PrefixCache::PrefixCache(KVCache& kv, bool enabled, BlockHasher hasher)
    : kv_(kv), enabled_(enabled), hasher_(hasher) {
  if (enabled_) blocks_.resize(static_cast<size_t>(kv.num_blocks()));
}

int32_t PrefixCache::used_blocks() const {
  return kv_.used_blocks() - lru_size_;
}

void PrefixCache::extend_hashes(std::span<const int32_t> tokens, size_t blocks,
                                PrefixChain& chain) const {
  for (size_t i = chain.hashes.size(); i < blocks; ++i)
    chain.hashes.push_back(
        hasher_(i ? chain.hashes[i - 1] : kRoot, tokens.subspan(i * B, static_cast<size_t>(B))));
}

int32_t PrefixCache::find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const {
  auto [it, end] = by_hash_.equal_range(hash);
  for (; it != end; ++it) {
    const Block& b = blocks_[static_cast<size_t>(it->second)];
    if (b.parent == parent && std::equal(tokens.begin(), tokens.end(), b.tokens.begin()))
      return it->second;
  }
  return -1;
}

int32_t PrefixCache::acquire(std::span<const int32_t> tokens, PrefixChain& chain,
                             std::vector<int32_t>& table) {
  if (!enabled_ || tokens.empty()) return 0;
  if (!table.empty()) throw std::logic_error("PrefixCache::acquire needs an empty block table");
  const size_t max_blocks = (tokens.size() - 1) / B;
  extend_hashes(tokens, max_blocks, chain);
  chain.ids.clear();
  uint64_t parent = 0;
  for (size_t i = 0; i < max_blocks; ++i) {
    const int32_t b = find(chain.hashes[i], parent, tokens.subspan(i * B, B));
    if (b < 0) break;
    Block& blk = blocks_[static_cast<size_t>(b)];
    if (blk.ref++ == 0) lru_remove(b);
    table.push_back(b);
    chain.ids.push_back(blk.id);
    parent = blk.id;
  }
  return static_cast<int32_t>(table.size()) * B;
}

bool PrefixCache::reserve(std::vector<int32_t>& table, int64_t tokens) {
  if (!enabled_) return kv_.reserve(table, tokens);
  const int64_t need = KVCache::blocks_for(tokens) - static_cast<int64_t>(table.size());
  if (need <= 0) return true;
  if (need > int64_t{kv_.free_blocks()} + lru_size_) return false;
  std::vector<int32_t> evicted;
  while (kv_.free_blocks() + static_cast<int64_t>(evicted.size()) < need) {
    const int32_t b = lru_head_;
    evict(b);
    evicted.push_back(b);
  }
  kv_.release(evicted);
  const size_t old = table.size();
  if (!kv_.reserve(table, tokens)) throw std::logic_error("PrefixCache: free blocks miscounted");
  for (size_t i = old; i < table.size(); ++i) blocks_[static_cast<size_t>(table[i])].ref = 1;
  return true;
}

void PrefixCache::release(std::vector<int32_t>& table, PrefixChain& chain) {
  chain.ids.clear();
  if (!enabled_) {
    kv_.release(table);
    return;
  }
  std::vector<int32_t> to_free;
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    Block& blk = blocks_[static_cast<size_t>(*it)];
    if (--blk.ref > 0) continue;
    if (blk.id)
      lru_push(*it);
    else
      to_free.push_back(*it);
  }
  kv_.release(to_free);
  table.clear();
}

void PrefixCache::commit(std::span<const int32_t> tokens, int32_t n_computed,
                         std::span<const int32_t> table, PrefixChain& chain) {
  if (!enabled_) return;
  const size_t full = std::min(static_cast<size_t>(n_computed / B), table.size());
  if (chain.ids.size() >= full) return;
  extend_hashes(tokens, full, chain);
  for (size_t i = chain.ids.size(); i < full; ++i) {
    const uint64_t parent = i ? chain.ids[i - 1] : 0;
    const auto toks = tokens.subspan(i * B, B);
    // Already cached (computed by another sequence at the same time): that registration stands
    // for this prefix; this sequence's own copy is freed with it.
    if (const int32_t same = find(chain.hashes[i], parent, toks); same >= 0) {
      chain.ids.push_back(blocks_[static_cast<size_t>(same)].id);
      continue;
    }
    Block& blk = blocks_[static_cast<size_t>(table[i])];
    blk.id = next_id_++;
    blk.hash = chain.hashes[i];
    blk.parent = parent;
    std::copy(toks.begin(), toks.end(), blk.tokens.begin());
    by_hash_.emplace(blk.hash, table[i]);
    chain.ids.push_back(blk.id);
  }
}

void PrefixCache::lru_push(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.prev = lru_tail_;
  blk.next = -1;
  if (lru_tail_ >= 0)
    blocks_[static_cast<size_t>(lru_tail_)].next = b;
  else
    lru_head_ = b;
  lru_tail_ = b;
  ++lru_size_;
}

void PrefixCache::lru_remove(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  (blk.prev >= 0 ? blocks_[static_cast<size_t>(blk.prev)].next : lru_head_) = blk.next;
  (blk.next >= 0 ? blocks_[static_cast<size_t>(blk.next)].prev : lru_tail_) = blk.prev;
  blk.prev = blk.next = -1;
  --lru_size_;
}

void PrefixCache::evict(int32_t b) {
  lru_remove(b);
  Block& blk = blocks_[static_cast<size_t>(b)];
  auto [it, end] = by_hash_.equal_range(blk.hash);
  for (; it != end; ++it)
    if (it->second == b) {
      by_hash_.erase(it);
      break;
    }
  blk.id = 0;
}

std::vector<int32_t> PrefixCache::eviction_order() const {
  std::vector<int32_t> order;
  for (int32_t b = lru_head_; b >= 0; b = blocks_[static_cast<size_t>(b)].next) order.push_back(b);
  return order;
}

}  // namespace sandwich::engine
