#include <gtest/gtest.h>

#include "engine/text/stop_strings.h"

namespace sandwich::engine {
namespace {

std::string feed(StopStringMatcher& m, std::initializer_list<const char*> pieces) {
  std::string out;
  for (auto* p : pieces) {
    out += m.push(p);
    if (m.stopped()) return out;
  }
  return out + m.flush();
}

TEST(StopStrings, StopsBeforeTheStopStringAcrossPieces) {
  StopStringMatcher m({"\n\n", "END"});
  EXPECT_EQ(feed(m, {"Hello", " wor", "ld.\n", "\nmore"}), "Hello world.");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "\n\n");
}

TEST(StopStrings, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.push("abcE"), "abc");
  EXPECT_EQ(m.push("Nx"), "ENx");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("EN"), "");
  EXPECT_EQ(m.flush(), "EN");
}

TEST(StopStrings, EarliestMatchWins) {
  StopStringMatcher m({"cd", "b"});
  EXPECT_EQ(m.push("abcd"), "a");
  EXPECT_EQ(m.matched(), "b");
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStringMatcher m({"", ""});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace sandwich::engine
