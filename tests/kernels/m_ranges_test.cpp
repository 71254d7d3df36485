// The one rule by which a tuned table's range of M joins its key: a range of M >= 1 that
// overlaps none already there, whatever the order of adding; conflict() asks without adding.
#include "kernels/m_ranges.h"

#include <gtest/gtest.h>

#include <string>

namespace sandwich::kernels {
namespace {

struct Named {
  int64_t m_lo = 1, m_hi = 1;
  std::string name;
};

TEST(MRanges, KeepsDisjointRangesInOrderOfM) {
  MRanges<Named> r;
  EXPECT_EQ(r.add({100, 200, "c"}), "");
  EXPECT_EQ(r.add({1, 3, "a"}), "");
  EXPECT_EQ(r.add({4, 99, "b"}), "");
  ASSERT_EQ(r.all().size(), 3u);
  EXPECT_EQ(r.all().front().name, "a");
  EXPECT_EQ(r.all().back().name, "c");
  for (auto [m, want] : {std::pair<int64_t, const char*>{1, "a"},
                         {3, "a"},
                         {4, "b"},
                         {99, "b"},
                         {100, "c"},
                         {200, "c"}}) {
    ASSERT_NE(r.find(m), nullptr) << m;
    EXPECT_EQ(r.find(m)->name, want) << m;
  }
  EXPECT_EQ(r.find(0), nullptr);
  EXPECT_EQ(r.find(201), nullptr);
}

TEST(MRanges, SaysWhyARangeMayNotJoinWithoutAddingIt) {
  MRanges<Named> r;
  ASSERT_EQ(r.add({10, 20, "x"}), "");
  ASSERT_EQ(r.add({30, 40, "y"}), "");
  EXPECT_EQ(r.conflict(0, 4), "not a range of M >= 1");
  EXPECT_EQ(r.conflict(5, 4), "not a range of M >= 1");
  EXPECT_EQ(r.conflict(20, 25), "overlaps M 10..20");
  EXPECT_EQ(r.conflict(1, 10), "overlaps M 10..20");
  EXPECT_EQ(r.conflict(12, 14), "overlaps M 10..20");
  EXPECT_EQ(r.conflict(15, 35), "overlaps M 10..20");  // the lowest of those it overlaps
  EXPECT_EQ(r.conflict(21, 29), "");
  EXPECT_EQ(r.all().size(), 2u);
  EXPECT_EQ(r.add({25, 30, "z"}), "overlaps M 30..40");
  EXPECT_EQ(r.all().size(), 2u);
  EXPECT_EQ(r.find(25), nullptr);
}

}  // namespace
}  // namespace sandwich::kernels
