// The tuned-schedule table file: round trip, clear errors for a bad file, and install: what is
// valid is installed, everything else warns once and leaves the cost model's schedules.
#include "engine/plans/schedule_table.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "covering_schedule_table.h"
#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/plan.h"
#include "kernels/kernel_tunables.h"
#include "kernels/tuned_schedules.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

namespace fs = std::filesystem;
using kernels::DType;
using kernels::GemmShape;

// Each test leaves nothing installed for the next.
class ScheduleTableTest : public ::testing::Test {
 protected:
  void TearDown() override {
    kernels::install_tuned_schedules(nullptr);
    kernels::clear_kernel_params();
  }
  test::TempDir dir_;
};

// A valid schedule for the shape that differs from the cost model's.
std::string other_schedule(const GemmShape& s, int which) {
  kernels::Schedule c = kernels::default_schedule(s);
  c.bm = c.um * (2 + which);
  c.bk = kernels::k_group(s.weights) * (24 + 8 * which);
  return c.to_string();
}

ScheduleTable sample_table() {
  ScheduleTable t = test::empty_schedule_table();
  TunedGemm g{256, 128, "bf16", 2, false, {}};
  g.ranges.push_back({1, 4, other_schedule({1, 256, 128, DType::BF16, 2}, 0), 41.5, "searched"});
  g.ranges.push_back({5, 64, other_schedule({5, 256, 128, DType::BF16, 2}, 1), 80, "reused"});
  t.gemms.push_back(g);
  TunedGemm p{192, 64, "f32", 1, true, {}};
  p.ranges.push_back({1, 8, other_schedule({1, 192, 64, DType::F32, 1, true}, 2), 0, "derived"});
  t.gemms.push_back(p);
  t.tunables.push_back({"attention_decode",
                        {{"head_dim", 64}, {"group", 2}},
                        {{1, 16, {{"kv_blocks", 4}}, 1e-6, "searched"}}});
  return t;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST_F(ScheduleTableTest, WriteThenReadGivesTheSameTable) {
  ScheduleTable t = sample_table();
  t.resume_json = R"({"done":[1,2]})";
  const fs::path file = dir_ / "t.json";
  write_schedule_table(t, file);
  EXPECT_FALSE(fs::exists(dir_ / ("t.json.tmp." + std::to_string(getpid()))));
  const ScheduleTable r = read_schedule_table(file);
  EXPECT_EQ(r.machine.mismatch(t.machine), "");
  EXPECT_EQ(r.machine.cores, "0-1");
  EXPECT_EQ(r.model, "test");
  ASSERT_EQ(r.gemms.size(), 2u);
  EXPECT_EQ(r.gemms[0].n, 256);
  EXPECT_EQ(r.gemms[0].dtype, "bf16");
  EXPECT_EQ(r.gemms[1].dtype, "f32");
  EXPECT_TRUE(r.gemms[1].pair);
  ASSERT_EQ(r.gemms[0].ranges.size(), 2u);
  EXPECT_EQ(r.gemms[0].ranges[1].m_lo, 5);
  EXPECT_EQ(r.gemms[0].ranges[1].m_hi, 64);
  EXPECT_EQ(r.gemms[0].ranges[1].schedule, t.gemms[0].ranges[1].schedule);
  EXPECT_EQ(r.gemms[0].ranges[0].gflops, 41.5);
  EXPECT_EQ(r.gemms[0].ranges[1].how, "reused");
  ASSERT_EQ(r.tunables.size(), 1u);
  EXPECT_EQ(r.tunables[0].key.at("group"), 2);
  EXPECT_EQ(r.tunables[0].ranges[0].params.at("kv_blocks"), 4);
  EXPECT_EQ(r.resume_json, R"({"done":[1,2]})");
  // Writing over an existing table replaces it.
  t.gemms.pop_back();
  write_schedule_table(t, file);
  EXPECT_EQ(read_schedule_table(file).gemms.size(), 1u);
}

TEST_F(ScheduleTableTest, ReadNamesTheFileAndTheBadField) {
  const auto error_of = [&](const std::string& text) -> std::string {
    const fs::path file = dir_ / "bad.json";
    std::ofstream(file) << text;
    try {
      read_schedule_table(file);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of("{").find("JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("expected an object"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "x", "version": 1})").find("format"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "sandwich-schedules", "version": 2})").find("version"),
            std::string::npos);
  // Field by field, from a good table.
  const fs::path good = dir_ / "good.json";
  write_schedule_table(sample_table(), good);
  const nlohmann::json j = nlohmann::json::parse(read_text(good));
  const auto broken = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json b = j;
    edit(b);
    return error_of(b.dump());
  };
  EXPECT_NE(broken([](auto& b) { b.erase("machine"); }).find("machine: missing"),
            std::string::npos);
  EXPECT_NE(broken([](auto& b) { b["machine"]["l2_bytes"] = "1M"; }).find("machine.l2_bytes"),
            std::string::npos);
  EXPECT_NE(broken([](auto& b) { b["gemms"][1]["n"] = 1.5; }).find("gemms[1].n"),
            std::string::npos);
  EXPECT_NE(broken([](auto& b) { b["gemms"][0]["dtype"] = "f16"; }).find("gemms[0].dtype"),
            std::string::npos);
  EXPECT_NE(
      broken([](auto& b) { b["gemms"][0]["ranges"][1]["m"] = {3}; }).find("gemms[0].ranges[1].m"),
      std::string::npos);
  EXPECT_NE(broken([](auto& b) {
              b["gemms"][0]["ranges"][0].erase("schedule");
            }).find("gemms[0].ranges[0].schedule: missing"),
            std::string::npos);
  EXPECT_NE(broken([](auto& b) {
              b["tunables"][0]["ranges"][0]["params"]["kv_blocks"] = "x";
            }).find("tunables[0].ranges[0].params.kv_blocks"),
            std::string::npos);
}

TEST_F(ScheduleTableTest, FingerprintsDifferInWhatTheySay) {
  const MachineFingerprint me = this_machine_fingerprint("0-3");
  EXPECT_FALSE(me.cpu.empty());
  EXPECT_EQ(me.kernels, kernels::kernels_version());
  MachineFingerprint other = me;
  other.cores = "4-7";  // informative only
  EXPECT_EQ(me.mismatch(other), "");
  other.cpu = "Intel(R) Xeon(R) Platinum 8488C";
  other.l2_bytes = me.l2_bytes + 1;
  const std::string m = me.mismatch(other);
  EXPECT_NE(m.find("cpu is \"" + me.cpu + "\", the table's \"Intel(R) Xeon(R) Platinum 8488C\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("L2 is"), std::string::npos) << m;
}

TEST_F(ScheduleTableTest, InstallsEveryValidRangeAndTunable) {
  const fs::path file = dir_ / "t.json";
  const ScheduleTable t = sample_table();
  write_schedule_table(t, file);
  std::ostringstream warn;
  EXPECT_EQ(install_schedule_table(file, warn), 3u);
  EXPECT_EQ(warn.str(), "");
  const kernels::TunedSchedules* installed = kernels::installed_tuned_schedules();
  ASSERT_NE(installed, nullptr);
  EXPECT_EQ(installed->keys(), 2u);
  const GemmShape s{7, 256, 128, DType::BF16, 2};
  EXPECT_EQ(kernels::planned_schedule(s).to_string(), t.gemms[0].ranges[1].schedule);
  const auto* params =
      kernels::kernel_params("attention_decode", {{"head_dim", 64}, {"group", 2}}, 16);
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(params->at("kv_blocks"), 4);
}

// Each bad entry: one line naming the file and the entry, the rest installed.
TEST_F(ScheduleTableTest, BadEntriesWarnAndFallBackToTheCostModel) {
  ScheduleTable t = sample_table();
  auto& ranges = t.gemms[0].ranges;
  ranges[0].schedule = "avx512bf16 6x64 slice 96x256";  // malformed
  // An impossible split: 1x3x1 threads for a 2-thread GEMM.
  kernels::Schedule split = kernels::parse_schedule(ranges[1].schedule);
  split.tm = 1;
  split.tn = 3;
  split.tk = 1;
  ranges[1].schedule = split.to_string();
  ranges.push_back({65, 100, other_schedule({65, 256, 128, DType::BF16, 2}, 0), 0, ""});
  ranges.push_back({90, 120, other_schedule({90, 256, 128, DType::BF16, 2}, 1), 0, ""});  // overlap
  t.tunables[0].ranges.push_back({0, 4, {}, 0, ""});  // M from 0
  const fs::path file = dir_ / "t.json";
  write_schedule_table(t, file);
  std::ostringstream warn;
  EXPECT_EQ(install_schedule_table(file, warn), 2u);  // 65..100 and the pair's
  const std::string w = warn.str();
  EXPECT_EQ(std::count(w.begin(), w.end(), '\n'), 4) << w;
  for (const std::string& part :
       {"sandwich: schedules: " + file.string() +
            ": tuned schedule for N=256 K=128 bf16 "
            "threads=2 M 1..4: schedule \"avx512bf16 6x64 "
            "slice 96x256\": malformed",
        std::string("N=256 K=128 bf16 threads=2 M 5..64: schedule ") + split.to_string() +
            ": the thread grid must multiply to the team's 2 threads",
        std::string("N=256 K=128 bf16 threads=2 M 90..120: overlaps M 65..100"),
        std::string("attention_decode group=2 head_dim=64 M 0..4")})
    EXPECT_NE(w.find(part), std::string::npos) << part << "\n" << w;
  EXPECT_NE(w.find("the cost model's schedule is used"), std::string::npos) << w;
  // The bad ranges run the cost model's schedules; the good ones the table's.
  for (int64_t m : {1, 4, 5, 64, 101, 120}) {
    const GemmShape s{m, 256, 128, DType::BF16, 2};
    EXPECT_EQ(kernels::planned_schedule(s), kernels::default_schedule(s)) << m;
  }
  const GemmShape s{70, 256, 128, DType::BF16, 2};
  EXPECT_EQ(kernels::planned_schedule(s).to_string(), ranges[2].schedule);
}

// One check serves both: a plan's strict check reads its problems, and its install warns of the
// same entries and installs the rest, as often as asked.
TEST_F(ScheduleTableTest, ACheckedTableInstallsWhatItsProblemsLeave) {
  ScheduleTable t = sample_table();
  t.gemms[0].ranges.push_back({60, 70, other_schedule({60, 256, 128, DType::BF16, 2}, 0), 0, ""});
  t.tunables[0].ranges.push_back({8, 32, {}, 0, ""});
  const CheckedScheduleTable checked(t, "t.json");
  EXPECT_EQ(checked.problems(),
            (std::vector<std::string>{
                "t.json: tuned schedule for N=256 K=128 bf16 threads=2 M 60..70: overlaps M 5..64",
                "t.json: tuned parameters of attention_decode M 8..32: overlaps M 1..16"}));
  std::ostringstream warn;
  EXPECT_EQ(checked.install(warn), 3u);
  EXPECT_EQ(warn.str(),
            "sandwich: schedules: t.json: tuned schedule for N=256 K=128 bf16 threads=2 M 60..70: "
            "overlaps M 5..64; the cost model's schedule is used\n"
            "sandwich: schedules: t.json: kernel parameters for attention_decode group=2 "
            "head_dim=64 M 8..32: overlaps M 1..16; the kernel's defaults are used\n");
  std::ostringstream again;
  EXPECT_EQ(checked.install(again), 3u);
  EXPECT_EQ(again.str(), warn.str());
  EXPECT_EQ(kernels::planned_schedule(GemmShape{7, 256, 128, DType::BF16, 2}).to_string(),
            t.gemms[0].ranges[1].schedule);
}

TEST_F(ScheduleTableTest, AMissingCorruptOrForeignTableWarnsOnceAndInstallsNothing) {
  // Something installed before is dropped: the cost model everywhere.
  write_schedule_table(sample_table(), dir_ / "good.json");
  std::ostringstream ignored;
  ASSERT_EQ(install_schedule_table(dir_ / "good.json", ignored), 3u);

  const auto install = [&](const fs::path& file) {
    std::ostringstream warn;
    EXPECT_EQ(install_schedule_table(file, warn), 0u);
    EXPECT_EQ(kernels::installed_tuned_schedules(), nullptr);
    EXPECT_EQ(kernels::kernel_params("attention_decode", {{"head_dim", 64}, {"group", 2}}, 1),
              nullptr);
    const std::string w = warn.str();
    EXPECT_EQ(std::count(w.begin(), w.end(), '\n'), 1) << w;
    EXPECT_EQ(w.rfind("sandwich: schedules: ", 0), 0u) << w;
    EXPECT_NE(w.find(file.string()), std::string::npos) << w;
    EXPECT_NE(w.find("the cost model's schedules are used"), std::string::npos) << w;
    return w;
  };
  install(dir_ / "missing.json");
  std::ofstream(dir_ / "corrupt.json") << R"({"format": "sandwich-schedules", "ver)";
  install(dir_ / "corrupt.json");
  ScheduleTable foreign = sample_table();
  foreign.machine.cpu = "Intel(R) Xeon(R) Platinum 8488C";
  write_schedule_table(foreign, dir_ / "foreign.json");
  EXPECT_NE(install(dir_ / "foreign.json").find("another machine"), std::string::npos);
  ScheduleTable old = sample_table();
  old.machine.kernels = "d0-000000000000";
  write_schedule_table(old, dir_ / "old.json");
  EXPECT_NE(install(dir_ / "old.json").find("kernels is"), std::string::npos);
  const GemmShape s{7, 256, 128, DType::BF16, 2};
  EXPECT_EQ(kernels::planned_schedule(s), kernels::default_schedule(s));
}

TEST_F(ScheduleTableTest, MissesGoToStderrOncePerKey) {
  write_schedule_table(sample_table(), dir_ / "t.json");
  std::ostringstream warn;
  install_schedule_table(dir_ / "t.json", warn);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    kernels::planned_schedule({3, 512, 128, DType::BF16, 2});
    kernels::planned_schedule({100, 256, 128, DType::BF16, 2});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "sandwich: schedules: the table has no entry for N=512 K=128 bf16 threads=2; the "
            "cost model's schedule is used\n"
            "sandwich: schedules: the table's ranges of M for N=256 K=128 bf16 threads=2 do not "
            "cover every M; the cost model's schedule is used outside them\n");
}

TEST_F(ScheduleTableTest, PlanFilesNameATableRelativeToTheirFolder) {
  fs::create_directories(dir_ / "plans");
  std::ofstream(dir_ / "plans/p.json")
      << R"({"prefill": "1x1", "decode": "1x1", "schedules": "tables/t.json"})";
  const Plan p = load_plan(dir_ / "plans/p.json");
  ASSERT_TRUE(p.schedules);
  EXPECT_EQ(*p.schedules, dir_ / "plans/tables/t.json");
  EXPECT_FALSE(load_plan(dir_ / "plans/p.json").schedules->empty());
  std::ofstream(dir_ / "plans/q.json") << R"({"prefill": "1x1", "decode": "1x1"})";
  EXPECT_FALSE(load_plan(dir_ / "plans/q.json").schedules);
  std::ofstream(dir_ / "plans/r.json") << R"({"prefill": "1x1", "decode": "1x1", "schedules": 3})";
  try {
    load_plan(dir_ / "plans/r.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("r.json: schedules: "), std::string::npos) << e.what();
  }
}

TEST(PlanFile, WrittenByTheTunerReadsBackWithEveryField) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sandwich-plan-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ScheduleTable t;
  t.machine = this_machine_fingerprint("0");
  t.model = "tiny";
  write_schedule_table(t, dir / "p.schedules.json");
  Plan p;
  p.prefill = single_rank_config(1);
  p.decode = single_rank_config(1);
  p.schedules = dir / "p.schedules.json";
  p.model = model_identity(load_preset("llama-160m"), "bf16", "");
  p.machine = this_machine_fingerprint("0");
  p.created = "2026-11-24T00:00:00Z";
  p.command = "sandwich-tune plan --model llama-160m";
  p.objective = "goodput";
  p.prefill_figures = {1.5, 2.5};
  p.details_json = R"({"stages": []})";
  write_plan(p, dir / "p.json");
  const Plan q = load_plan(dir / "p.json");
  EXPECT_EQ(q.version, kPlanVersion);
  EXPECT_EQ(q.prefill.to_string(), p.prefill.to_string());
  ASSERT_TRUE(q.schedules);
  EXPECT_EQ(std::filesystem::canonical(*q.schedules),
            std::filesystem::canonical(dir / "p.schedules.json"));
  ASSERT_TRUE(q.model);
  EXPECT_EQ(q.model->mismatch(*p.model), "");
  EXPECT_EQ(q.machine->mismatch(*p.machine), "");
  EXPECT_EQ(q.command, p.command);
  EXPECT_DOUBLE_EQ(q.prefill_figures.measured_ms, 2.5);
  EXPECT_LT(q.decode_figures.measured_ms, 0);
  EXPECT_EQ(q.details_json, R"({"stages":[]})");
  // The same table inline.
  p.inline_schedules = t;
  write_plan(p, dir / "inline.json");
  const Plan r = load_plan(dir / "inline.json");
  ASSERT_TRUE(r.inline_schedules);
  EXPECT_EQ(r.inline_schedules->model, "tiny");
  EXPECT_FALSE(r.schedules);
  // Another model's shapes are named.
  ModelIdentity other = *p.model;
  other.shape.n_layers += 1;
  EXPECT_NE(other.mismatch(*p.model).find("n_layers"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sandwich::engine
