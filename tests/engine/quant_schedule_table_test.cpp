// Schedule tables of quantized models: entries keyed by their matrix's block type round-trip and
// install; tables written before quantized keys existed still load, as float entries; a table
// whose entries are of other types than the model's GEMMs misses as any other shape does.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "covering_schedule_table.h"
#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/schedule_table.h"
#include "kernels/kernel_tunables.h"
#include "kernels/schedule.h"
#include "kernels/tuned_schedules.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

namespace fs = std::filesystem;
using kernels::QType;
using kernels::QuantShape;

class QuantScheduleTableTest : public ::testing::Test {
 protected:
  void TearDown() override {
    kernels::install_tuned_schedules(nullptr);
    kernels::clear_kernel_params();
  }
  test::TempDir dir_;
};

// The integer path with other slices than the rule's, or the BF16-unpacking path.
std::string integer_schedule(const QuantShape& s) {
  kernels::Schedule c = kernels::default_quant_schedule(s);
  c.um = 1;
  c.bm = 2;
  c.bn = 32;
  c.bk = kernels::qtype_info(s.type).block_elems;
  return c.to_string();
}
std::string unpacking_schedule(const QuantShape& s) {
  kernels::Schedule c = kernels::default_quant_schedule(s);
  c.unpack_bf16 = true;
  c.bn = 128;
  return c.to_string();
}

ScheduleTable quant_table() {
  ScheduleTable t = test::empty_schedule_table();
  TunedGemm q4{256, 512, "q4_k", 2, false, {}};
  q4.ranges.push_back({1, 8, integer_schedule({1, 256, 512, QType::Q4_K, 2}), 12, "searched"});
  q4.ranges.push_back({9, 64, unpacking_schedule({9, 256, 512, QType::Q4_K, 2}), 30, "window"});
  t.gemms.push_back(q4);
  TunedGemm q6{256, 512, "Q6_K", 2, true, {}};  // names are read in any case
  q6.ranges.push_back({1, 64, integer_schedule({1, 256, 512, QType::Q6_K, 2, true}), 0, ""});
  t.gemms.push_back(q6);
  return t;
}

TEST_F(QuantScheduleTableTest, QuantizedKeysRoundTripAndInstall) {
  const ScheduleTable t = quant_table();
  write_schedule_table(t, dir_ / "t.json");
  const ScheduleTable r = read_schedule_table(dir_ / "t.json");
  ASSERT_EQ(r.gemms.size(), 2u);
  EXPECT_EQ(r.gemms[0].dtype, "q4_k");
  EXPECT_EQ(r.gemms[1].dtype, "q6_k");
  EXPECT_TRUE(r.gemms[1].pair);
  EXPECT_EQ(r.gemms[0].ranges[1].schedule, t.gemms[0].ranges[1].schedule);
  EXPECT_TRUE(schedule_table_problems(r, "t.json").empty());

  std::ostringstream warn;
  EXPECT_EQ(install_schedule_table(dir_ / "t.json", warn), 3u);
  EXPECT_EQ(warn.str(), "");
  const kernels::TunedSchedules* installed = kernels::installed_tuned_schedules();
  ASSERT_NE(installed, nullptr);
  for (const kernels::GemmKey& k : installed->all_keys()) EXPECT_TRUE(k.qtype) << k.to_string();
  EXPECT_EQ(kernels::planned_schedule(QuantShape{4, 256, 512, QType::Q4_K, 2}).to_string(),
            t.gemms[0].ranges[0].schedule);
  EXPECT_EQ(kernels::planned_schedule(QuantShape{40, 256, 512, QType::Q4_K, 2}).to_string(),
            t.gemms[0].ranges[1].schedule);
  EXPECT_EQ(kernels::planned_schedule(QuantShape{40, 256, 512, QType::Q6_K, 2, true}).to_string(),
            t.gemms[1].ranges[0].schedule);
}

// A table as `sandwich-tune kernels` wrote it before quantized keys: "bf16" and "f32" entries,
// read and installed as they always were.
TEST_F(QuantScheduleTableTest, OldTablesLoadAsFloatEntries) {
  const kernels::Schedule bf16 =
      kernels::default_schedule(kernels::GemmShape{1, 256, 128, kernels::DType::BF16, 2});
  const kernels::Schedule f32 =
      kernels::default_schedule(kernels::GemmShape{1, 192, 64, kernels::DType::F32, 1, true});
  const nlohmann::json old = {
      {"format", "sandwich-schedules"},
      {"version", 1},
      {"machine", machine_fingerprint_to_json(this_machine_fingerprint("0-1"))},
      {"model", "llama-1.3b"},
      {"config", "1x2"},
      {"gemms",
       {{{"n", 256},
         {"k", 128},
         {"dtype", "bf16"},
         {"threads", 2},
         {"pair", false},
         {"ranges", {{{"m", {1, 16}}, {"schedule", bf16.to_string()}, {"gflops", 40.5}}}}},
        {{"n", 192},
         {"k", 64},
         {"dtype", "f32"},
         {"threads", 1},
         {"pair", true},
         {"ranges", {{{"m", {1, 8}}, {"schedule", f32.to_string()}, {"how", "searched"}}}}}}}};
  std::ofstream(dir_ / "old.json") << old.dump(1);
  const ScheduleTable r = read_schedule_table(dir_ / "old.json");
  ASSERT_EQ(r.gemms.size(), 2u);
  EXPECT_EQ(r.gemms[0].dtype, "bf16");
  EXPECT_EQ(r.gemms[1].dtype, "f32");
  std::ostringstream warn;
  EXPECT_EQ(install_schedule_table(dir_ / "old.json", warn), 2u);
  EXPECT_EQ(warn.str(), "");
  const auto keys = kernels::installed_tuned_schedules()->all_keys();
  ASSERT_EQ(keys.size(), 2u);
  for (const kernels::GemmKey& k : keys) EXPECT_FALSE(k.qtype) << k.to_string();
  EXPECT_EQ(kernels::planned_schedule(kernels::GemmShape{9, 256, 128, kernels::DType::BF16, 2}),
            bf16);
}

// A BF16 model's table on a quantized model: its GEMMs are not the table's, so each warns once
// and runs the rule's schedule, as a BF16 table's entries do for an F32 model.
TEST_F(QuantScheduleTableTest, ATableOfOtherWeightTypesMissesOncePerShape) {
  ScheduleTable t = test::empty_schedule_table();
  TunedGemm g{256, 512, "bf16", 2, false, {}};
  g.ranges.push_back(
      {1, 64,
       kernels::default_schedule(kernels::GemmShape{1, 256, 512, kernels::DType::BF16, 2})
           .to_string(),
       0, ""});
  t.gemms.push_back(g);
  write_schedule_table(t, dir_ / "bf16.json");
  std::ostringstream warn;
  ASSERT_EQ(install_schedule_table(dir_ / "bf16.json", warn), 1u);
  const QuantShape q{4, 256, 512, QType::Q4_K, 2};
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(kernels::planned_schedule(q), kernels::default_quant_schedule(q));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "sandwich: schedules: the table has no entry for N=256 K=512 q4_k threads=2; the "
            "cost model's schedule is used\n");
}

TEST_F(QuantScheduleTableTest, BadQuantizedEntriesAreNamed) {
  ScheduleTable t = quant_table();
  write_schedule_table(t, dir_ / "t.json");
  std::ifstream in(dir_ / "t.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["gemms"][0]["dtype"] = "q3_k";
  std::ofstream(dir_ / "q3.json") << j.dump();
  try {
    read_schedule_table(dir_ / "q3.json");
    ADD_FAILURE() << "q3_k was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gemms[0].dtype"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("q3_k"), std::string::npos) << e.what();
  }
  // A K block that cuts a Q4_K block: that entry warns, the rest installs.
  kernels::Schedule cut = kernels::parse_schedule(t.gemms[0].ranges[0].schedule);
  cut.bk = 32;
  t.gemms[0].ranges[0].schedule = cut.to_string();
  write_schedule_table(t, dir_ / "cut.json");
  std::ostringstream warn;
  EXPECT_EQ(install_schedule_table(dir_ / "cut.json", warn), 2u);
  EXPECT_NE(warn.str().find("N=256 K=512 q4_k threads=2 M 1..8"), std::string::npos) << warn.str();
  EXPECT_NE(warn.str().find("block size 256"), std::string::npos) << warn.str();
}

}  // namespace
}  // namespace sandwich::engine
