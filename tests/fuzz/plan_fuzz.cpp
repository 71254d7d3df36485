// Plan files (--plan): a prefill and a decode service configuration, each a JSON configuration
// of ranks, its "RxT" short form, or a tuner's {"config": ...} entry, checked against this
// machine; and a kernel table inline, checked as apply_plan checks it (nothing installed).
#include <exception>

#include "engine/plans/checked_schedule_table.h"
#include "engine/plans/plan.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("plan.json", data, size);
  try {
    const engine::Plan plan = engine::load_plan(path);
    if (plan.inline_schedules)
      (void)engine::CheckedScheduleTable(*plan.inline_schedules, "plan.json: schedules").problems();
  } catch (const std::exception&) {
  }
  return 0;
}
