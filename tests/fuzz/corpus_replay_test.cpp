// Every fuzz target as a unit test: each file of its seed corpus (tests/fuzz/corpus/<target>/,
// and the model and tokenizer seeds generated_seeds.h derives from the reference data) runs through
// the target's entry point, so the plain build keeps the corpus passing and a crash the fuzzer once
// found stays fixed. (scripts/fuzz.sh runs the same targets under libFuzzer with ASan and UBSan.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "generated_seeds.h"
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
  std::map<std::string, std::string> seeds =
      fuzz::generated_seeds(GetParam().name, test::data_dir());
  // The templates' seeds are built, not derived from the reference data.
  const std::string name = GetParam().name;
  if (!seeds.empty() && name != "jinja_template" && name != "chat_template")
    SANDWICH_REQUIRE_DATA();
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) seeds[e.path().string()] = test::slurp(e.path());
  ASSERT_FALSE(seeds.empty()) << dir << ": every fuzz target needs a seed corpus";
  for (const auto& [name, bytes] : seeds) {
    SCOPED_TRACE(name);
    EXPECT_EQ(GetParam().run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, FuzzCorpus, testing::ValuesIn(kTargets),
                         [](const testing::TestParamInfo<Target>& p) { return p.param.name; });

}  // namespace
}  // namespace sandwich
