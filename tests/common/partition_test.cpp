#include "common/partition.h"

#include <gtest/gtest.h>

namespace sandwich {
namespace {

TEST(Partition, CoversTheRangeInNearlyEqualParts) {
  for (int64_t n : {0, 1, 7, 64, 1000})
    for (int64_t parts : {1, 2, 3, 8}) {
      int64_t next = 0;
      for (int64_t p = 0; p < parts; ++p) {
        const IndexRange r = partition(n, p, parts);
        EXPECT_EQ(r.begin, next);
        EXPECT_LE(r.size(), n / parts + 1);
        EXPECT_GE(r.size(), n / parts);
        next = r.end;
      }
      EXPECT_EQ(next, n);
    }
  EXPECT_EQ(partition(10, 1, 3), (IndexRange{3, 6}));
}

}  // namespace
}  // namespace sandwich
