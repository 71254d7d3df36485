#include "common/json_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "error_text.h"
#include "test_data.h"

namespace sandwich {
namespace {

std::string error_of(const std::filesystem::path& p) {
  return test::error_text([&] { read_json_file(p); });
}

TEST(JsonFile, ReadsAndNamesTheFileInEveryError) {
  test::TempDir dir;
  std::ofstream(dir / "ok.json") << R"({"a": [1, 2]})";
  EXPECT_EQ(read_json_file(dir / "ok.json")["a"][1], 2);
  std::ofstream(dir / "bad.json") << "{\"a\": ";
  EXPECT_NE(error_of(dir / "bad.json").find("bad.json: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(dir / "none.json").find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(dir.path()).find("is a directory, not a JSON file"), std::string::npos);
}

}  // namespace
}  // namespace sandwich
