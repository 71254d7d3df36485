#include "common/json_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "error_text.h"
#include "test_data.h"

namespace sandwich {
namespace {

std::string error_of(const std::filesystem::path& p) {
  return test::error_text([&] { read_json_file(p, file_kinds::kPlan); });
}

TEST(JsonFile, ReadsAndNamesTheFileInEveryError) {
  test::TempDir dir;
  std::ofstream(dir / "ok.json") << R"({"a": [1, 2]})";
  EXPECT_EQ(read_json_file(dir / "ok.json", file_kinds::kPlan)["a"][1], 2);
  std::ofstream(dir / "bad.json") << "{\"a\": ";
  EXPECT_NE(
      error_of(dir / "bad.json").find("plan " + (dir / "bad.json").string() + ": invalid JSON"),
      std::string::npos);
  EXPECT_NE(error_of(dir / "none.json").find("none.json: no such file"), std::string::npos);
  EXPECT_NE(error_of(dir.path()).find(": a directory, not a file"), std::string::npos);
}

}  // namespace
}  // namespace sandwich
