// Every fuzz target as a unit test: each file of its seed corpus (tests/fuzz/corpus/<target>/)
// runs through the target's entry point, so the plain build keeps the corpus passing and a
// crash the fuzzer once found stays fixed. (scripts/fuzz.sh runs the same targets under
// libFuzzer with ASan and UBSan.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "test_data.h"

// The targets' entry points, renamed by CMake from LLVMFuzzerTestOneInput.
#define SANDWICH_FUZZ_TARGET(name) extern "C" int sandwich_fuzz_##name(const uint8_t*, size_t);
#include "fuzz_targets.inc"
#undef SANDWICH_FUZZ_TARGET

namespace sandwich {
namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};

const Target kTargets[] = {
#define SANDWICH_FUZZ_TARGET(name) {#name, sandwich_fuzz_##name},
#include "fuzz_targets.inc"
#undef SANDWICH_FUZZ_TARGET
};

class FuzzCorpus : public testing::TestWithParam<Target> {};

TEST_P(FuzzCorpus, EveryFileRunsThroughTheTarget) {
  const fs::path dir = test::source_dir() / "tests/fuzz/corpus" / GetParam().name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << ": every fuzz target needs a seed corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << dir;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const std::string bytes = test::slurp(f);
    EXPECT_EQ(GetParam().run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, FuzzCorpus, testing::ValuesIn(kTargets),
                         [](const testing::TestParamInfo<Target>& p) { return p.param.name; });

}  // namespace
}  // namespace sandwich
