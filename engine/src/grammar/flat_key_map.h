#pragma once
// An open-addressing hash map from 64-bit keys to 32-bit values, for the stacks' hot paths (node
// interning, the visited set of a closure), where std::unordered_map's node per entry costs more
// than the work. clear() is O(1): entries carry the generation they were written in.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sandwich::engine::grammar {

class FlatKeyMap {
 public:
  FlatKeyMap() { reset(16); }

  // The value of `key`, inserting `value` first if absent; `inserted` says which.
  int32_t find_or_insert(uint64_t key, int32_t value, bool& inserted) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = mix(key) & (slots_.size() - 1);
    while (slots_[i].generation == generation_) {
      if (slots_[i].key == key) {
        inserted = false;
        return slots_[i].value;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = {key, value, generation_};
    ++size_;
    inserted = true;
    return value;
  }
  // Drops every entry without touching the slots.
  void clear() {
    size_ = 0;
    if (++generation_ == 0) reset(slots_.size());
  }
  // Drops every entry and the memory beyond the initial slots.
  void release() { reset(16); }
  size_t size() const { return size_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t key;
    int32_t value;
    uint32_t generation;  // the entry is live when this equals generation_
  };
  static uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  void reset(size_t n) {
    slots_.assign(n, Slot{0, 0, 0});
    generation_ = 1;
    size_ = 0;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const uint32_t live = generation_;
    reset(old.size() * 2);
    for (const Slot& s : old)
      if (s.generation == live) {
        bool unused;
        find_or_insert(s.key, s.value, unused);
      }
  }

  std::vector<Slot> slots_;
  uint32_t generation_ = 1;
  size_t size_ = 0;
};

}  // namespace sandwich::engine::grammar
