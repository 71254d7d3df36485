#include "common/paths.h"

#include <gtest/gtest.h>

#include "test_data.h"

namespace sandwich {
namespace {

TEST(Paths, EnvironmentVariablesComeFirst) {
  {
    test::ScopedEnv e("SANDWICH_CONFIGS", "/etc/sw");
    EXPECT_EQ(configs_dir(), "/etc/sw");
  }
  {
    test::ScopedEnv e("SANDWICH_SHARED", "/somewhere");
    EXPECT_EQ(shared_dir(), "/somewhere");
    EXPECT_EQ(default_length_trace(), "/somewhere/data/traces/sharegpt_lengths.csv");
  }
  {
    test::ScopedEnv x("XDG_CACHE_HOME", "/c");
    EXPECT_EQ(user_cache_dir(), "/c/sandwich");
  }
  {
    test::ScopedEnv x("XDG_CACHE_HOME", nullptr);
    test::ScopedEnv h("HOME", "/home/u");
    EXPECT_EQ(user_cache_dir(), "/home/u/.cache/sandwich");
  }
}

TEST(Paths, WithoutThemTheSourceTreesFolders) {
  test::ScopedEnv c("SANDWICH_CONFIGS", nullptr);
  EXPECT_TRUE(std::filesystem::is_regular_file(configs_dir() / "models" / "llama-160m.json"))
      << configs_dir();
}

}  // namespace
}  // namespace sandwich
