#pragma once
// A set of byte values: the terminal of the byte-level grammar.
#include <array>
#include <cstdint>

namespace sandwich::engine::grammar {

class ByteSet {
 public:
  void add(uint8_t b) { words_[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool has(uint8_t b) const { return (words_[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  const std::array<uint64_t, 4>& words() const { return words_; }

 private:
  std::array<uint64_t, 4> words_{};
};

}  // namespace sandwich::engine::grammar
