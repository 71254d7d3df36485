// The SLO presets of configs/slo/: the paper's values, the attainment default, the preset made
// for a model, and what an unknown name or a bad file says.
#include "common/slo_preset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "test_data.h"

namespace sandwich {
namespace {

TEST(SloPresets, ThePapersValues) {
  test::ScopedEnv configs("SANDWICH_CONFIGS", (test::source_dir() / "configs").string());
  struct Want {
    const char* name;
    double ttft, tpot;
  };
  for (const Want& w : {Want{"single-1.3b", 2200, 70}, Want{"single-8b", 8000, 240},
                        Want{"batched-160m", 200, 100}, Want{"batched-1.3b", 2000, 280}}) {
    const SloPreset p = read_slo_preset(w.name);
    EXPECT_EQ(p.ttft_ms, w.ttft) << w.name;
    EXPECT_EQ(p.tpot_ms, w.tpot) << w.name;
  }
  EXPECT_EQ(read_slo_preset("single-8b").num_prompts, 90);
  EXPECT_EQ(read_slo_preset("batched-160m").attainment_target, 0.9);
  EXPECT_DOUBLE_EQ(read_slo_preset("batched-1.3b").attainment(), 0.9);
  try {
    read_slo_preset("nosuch");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("known: batched-1.3b"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batched-160m"), std::string::npos) << e.what();
  }
  test::TempDir dir;
  std::ofstream(dir / "bad.json") << R"({"ttft_ms": 100})";
  EXPECT_THROW(read_slo_preset((dir / "bad.json").string()), std::invalid_argument);
}

TEST(SloPresets, TheOneMadeForAModel) {
  test::ScopedEnv configs("SANDWICH_CONFIGS", (test::source_dir() / "configs").string());
  EXPECT_EQ(default_slo_preset("llama-1.3b"), "batched-1.3b");
  EXPECT_EQ(default_slo_preset("llama3-8b"), "single-8b");
  EXPECT_EQ(default_slo_preset("stories260K"), "batched-1.3b");
}

}  // namespace
}  // namespace sandwich
