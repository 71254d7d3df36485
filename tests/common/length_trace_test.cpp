#include "common/length_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "common/paths.h"
#include "error_text.h"
#include "test_data.h"

namespace sandwich {
namespace {

std::string error_of(const std::filesystem::path& p) {
  return test::error_text([&] { read_length_trace(p); });
}

TEST(LengthTrace, HeaderNamesTheColumnsInAnyOrder) {
  test::TempDir dir;
  std::ofstream(dir / "a.csv") << "# a comment\noutput_tokens,input_tokens,x\n10,100,z\r\n"
                                  "20, 200,z\n\n30,300,z\n";
  EXPECT_EQ(read_length_trace(dir / "a.csv"),
            (std::vector<LengthPair>{{100, 10}, {200, 20}, {300, 30}}));
  std::ofstream(dir / "b.csv") << "5,6\n7,8\n";  // no header: input, output
  EXPECT_EQ(read_length_trace(dir / "b.csv"), (std::vector<LengthPair>{{5, 6}, {7, 8}}));
}

TEST(LengthTrace, MistakesNameTheFileAndLine) {
  test::TempDir dir;
  std::ofstream(dir / "bad.csv") << "input_tokens,output_tokens\n1,2\nthree,4\n";
  EXPECT_NE(error_of(dir / "bad.csv").find("bad.csv:3: input_tokens"), std::string::npos);
  std::ofstream(dir / "zero.csv") << "1,0\n";
  EXPECT_NE(error_of(dir / "zero.csv").find("zero.csv:1: output_tokens"), std::string::npos);
  std::ofstream(dir / "short.csv") << "1\n";
  EXPECT_NE(error_of(dir / "short.csv").find("expected at least 2 columns"), std::string::npos);
  std::ofstream(dir / "names.csv") << "prompt,completion\n5,6\n";
  EXPECT_NE(error_of(dir / "names.csv").find("no 'input_tokens' column"), std::string::npos);
  std::ofstream(dir / "empty.csv") << "input_tokens,output_tokens\n";
  EXPECT_NE(error_of(dir / "empty.csv").find("holds no request lengths"), std::string::npos);
  EXPECT_NE(error_of(dir / "none.csv")
                .find("length trace " + (dir / "none.csv").string() + ": no such file"),
            std::string::npos);
  EXPECT_NE(error_of(dir.path()).find("a directory, not a file"), std::string::npos);
}

TEST(LengthTrace, TheShareGptTrace) {
  SANDWICH_REQUIRE_DATA();
  const auto rows = read_length_trace(default_length_trace());
  EXPECT_EQ(rows.size(), 84226u);
  EXPECT_EQ(rows.front(), (LengthPair{21, 518}));
}

}  // namespace
}  // namespace sandwich
