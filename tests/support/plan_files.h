#pragma once
// Plan files for the tests that run a tool with --plan: one as `sandwich-tune plan` makes it for
// the stories260K model on this machine, to be edited into each kind of bad plan, and kernel
// tables whose schedules do not validate. For test binaries that link the kernels.
#include <filesystem>
#include <string>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/plans/schedule_table.h"
#include "kernels/schedule.h"
#include "test_data.h"

namespace sandwich::test {

inline std::string stories_weights() {
  return (data_dir() / "models/stories260K/stories260K.bin").string();
}

// Made for stories260K's weights at stories_weights() (F32) on this machine; no table.
inline engine::Plan stories_plan(const std::string& prefill = "1x2",
                                 const std::string& decode = "1x2") {
  engine::LoadOptions lo;
  lo.model = stories_weights();
  lo.require_tokenizer = false;
  const auto model = engine::load_model(lo);
  engine::Plan p;
  p.version = engine::kPlanVersion;
  p.model = engine::model_identity(model->config, "f32", stories_weights());
  p.machine = engine::this_machine_fingerprint("0-1");
  p.prefill = topotree::parse_service_config(prefill);
  p.decode = topotree::parse_service_config(decode);
  p.command = "sandwich-tune plan --model stories260K (a test)";
  return p;
}

// A table of this machine with one GEMM of stories260K whose schedules do not validate for
// its key: one that does not parse, one made for two threads under a one-thread key.
inline engine::ScheduleTable invalid_schedule_table() {
  engine::ScheduleTable t;
  t.machine = engine::this_machine_fingerprint("0-1");
  t.model = "stories260K";
  t.config = "1x2";
  const kernels::Schedule two_threads =
      kernels::default_schedule({64, 64, 64, kernels::DType::F32, 2});
  engine::TunedGemm g;
  g.n = 64;
  g.k = 64;
  g.dtype = "f32";
  g.threads = 1;
  g.ranges.push_back({1, 1, "banana 1x64", 0, "test"});
  g.ranges.push_back({2, 1 << 16, two_threads.to_string(), 0, "test"});
  t.gemms.push_back(g);
  return t;
}

}  // namespace sandwich::test
