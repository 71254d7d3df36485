// Budgets as people write them.
#include "tuner/time_budget.h"

#include <gtest/gtest.h>

namespace sandwich::tuner {
namespace {

TEST(TimeBudget, DurationsWithUnits) {
  EXPECT_EQ(parse_duration("30m"), 1800);
  EXPECT_EQ(parse_duration("900s"), 900);
  EXPECT_EQ(parse_duration("1h"), 3600);
  EXPECT_EQ(parse_duration("1h30m"), 5400);
  EXPECT_EQ(parse_duration("2.5s"), 2.5);
  EXPECT_EQ(parse_duration("45"), 45);
  for (const char* bad : {"", "m", "10x", "-5m", "0s", "1h30", "abc", "1..5s", "5 m"})
    EXPECT_THROW(parse_duration(bad), std::invalid_argument) << bad;
  EXPECT_EQ(duration_text(5400), "1h30m");
  EXPECT_EQ(duration_text(750), "12m30s");
  EXPECT_EQ(duration_text(45.2), "45s");
}

TEST(TimeBudget, CountsWhatAnEarlierRunSpent) {
  const TimeBudget b(100, 40);
  EXPECT_GE(b.used(), 40);
  EXPECT_LT(b.used(), 50);
  EXPECT_TRUE(b.past(0.4));
  EXPECT_FALSE(b.past(0.9));
}

}  // namespace
}  // namespace sandwich::tuner
