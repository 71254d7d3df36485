#pragma once
// Splitting n items into `parts` contiguous ranges whose sizes differ by at most one: the split
// every thread team, rank group and column shard uses.
#include <cstdint>

namespace sandwich {

struct IndexRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const IndexRange&) const = default;
};

// Part `part` of [0, n) split into `parts`: [n * part / parts, n * (part + 1) / parts).
inline IndexRange partition(int64_t n, int64_t part, int64_t parts) {
  return {n * part / parts, n * (part + 1) / parts};
}

}  // namespace sandwich
