#pragma once
// Code-point ranges as UTF-8 byte-range sequences, so that a character class becomes a small
// set of byte-level alternatives.
#include <cstdint>
#include <utility>
#include <vector>

namespace sandwich::engine::grammar {

struct ByteRange {
  uint8_t lo, hi;
};
// One alternative: a sequence of byte ranges, one per byte of the encoding.
using ByteRangeSequence = std::vector<ByteRange>;

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// The byte sequences that encode exactly the code points in [lo, hi] (inclusive), surrogates
// (D800..DFFF, never valid UTF-8) left out. Appends to out.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out);

// Sorted, merged, non-overlapping ranges; with negate, their complement in [0, kMaxCodePoint].
std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(
    std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negate);

// Appends the UTF-8 encoding of a code point.
void append_utf8(uint32_t cp, std::vector<uint8_t>& out);

}  // namespace sandwich::engine::grammar
