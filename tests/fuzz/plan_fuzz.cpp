// Plan files (--plan): a prefill and a decode service configuration, each a JSON configuration
// of ranks, its "RxT" short form, or a tuner's {"config": ...} entry, checked against this
// machine.
#include <exception>

#include "engine/plans/plan.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("plan.json", data, size);
  try {
    (void)engine::load_plan(path);
  } catch (const std::exception&) {
  }
  return 0;
}
