#include "common/cpu_list.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace sandwich {
namespace {

TEST(CpuList, FormatsRunsAsRanges) {
  EXPECT_EQ(format_cpu_list(std::vector<int>{0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
  EXPECT_EQ(format_cpu_list(std::vector<int>{3}), "3");
  EXPECT_EQ(format_cpu_list(std::vector<int>{}), "");
  EXPECT_EQ(format_cpu_list(std::vector<int>{8, 9, 0, 1}), "8-9,0-1");  // in the given order
}

TEST(CpuList, ParsesWhatItFormats) {
  EXPECT_EQ(parse_cpu_list("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  for (const std::vector<int>& ids : {std::vector<int>{0, 1, 2, 4, 6, 7}, std::vector<int>{9}})
    EXPECT_EQ(parse_cpu_list(format_cpu_list(ids)), ids);
}

TEST(CpuList, RefusesMalformedLists) {
  for (const char* bad : {"", ",", "1,", "a", "1-", "-1", "3-1", "1-2-3", "0x1", "99999"})
    EXPECT_THROW(parse_cpu_list(bad, 4095), std::invalid_argument) << bad;
  try {
    parse_cpu_list("0,7-5");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'7-5'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sandwich
