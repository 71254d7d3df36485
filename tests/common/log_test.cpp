// The log: its line format and the level filter.
#include "common/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandwich {
namespace {

// Captures the lines and restores stderr and the level afterwards.
struct CapturedLog {
  std::vector<std::string> lines;
  LogLevel old = log_level();
  CapturedLog() {
    set_log_sink([this](const std::string& l) { lines.push_back(l); });
  }
  ~CapturedLog() {
    set_log_sink({});
    set_log_level(old);
  }
};

TEST(Log, LineHasTimeLevelComponentAndOneLine) {
  const auto when = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764023593123));
  EXPECT_EQ(format_log_line(LogLevel::Warning, "sandwichd", "two\nlines", when),
            "2025-11-24T22:33:13.123Z WARNING sandwichd: two lines");
}

TEST(Log, LevelFilterDropsLowerLevels) {
  CapturedLog log;
  set_log_level(LogLevel::Warning);
  log_line(LogLevel::Debug, "x", "debug");
  log_line(LogLevel::Info, "x", "info");
  logf(LogLevel::Warning, "x", "warning %d", 3);
  log_line(LogLevel::Error, "x", "error");
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_NE(log.lines[0].find(" WARNING x: warning 3"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[1].find(" ERROR x: error"), std::string::npos) << log.lines[1];
  set_log_level(LogLevel::Debug);
  EXPECT_TRUE(log_enabled(LogLevel::Debug));
  log_line(LogLevel::Debug, "x", "now seen");
  EXPECT_EQ(log.lines.size(), 3u);
}

TEST(Log, LevelNames) {
  EXPECT_EQ(log_level_named("debug"), LogLevel::Debug);
  EXPECT_EQ(log_level_named("info"), LogLevel::Info);
  EXPECT_EQ(log_level_named("warning"), LogLevel::Warning);
  EXPECT_EQ(log_level_named("error"), LogLevel::Error);
  EXPECT_EQ(log_level_named("INFO"), std::nullopt);
  EXPECT_EQ(log_level_named("verbose"), std::nullopt);
}

TEST(Log, LongMessagesAreWhole) {
  CapturedLog log;
  const std::string big(5000, 'a');
  logf(LogLevel::Error, "x", "%s|", big.c_str());
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find(": " + big + "|"), std::string::npos);
}

}  // namespace
}  // namespace sandwich
