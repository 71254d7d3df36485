// The tuner's kernel files: GEMM schedules as text (one per line, as plans store them), each
// parsed, validated against a few shapes and priced by the cost model; and, when the input is
// JSON, the tuner's cached calibration record and machine-parameter file.
#include <exception>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "kernels/schedule.h"
#include "tuner/calibration.h"
#include "tuner/machine_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const std::string text(fuzz::as_text(data, size));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    try {
      const kernels::Schedule s = kernels::parse_schedule(line);
      for (kernels::DType w : {kernels::DType::BF16, kernels::DType::F32})
        for (int64_t m : {1, 7, 128}) {
          const kernels::GemmShape shape{m, 256, 512, w, 2};
          try {
            kernels::validate_schedule(shape, s);
            (void)kernels::predict_seconds(shape, s);
          } catch (const std::invalid_argument&) {
          }
        }
    } catch (const std::invalid_argument&) {
    }
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    tuner::Calibration::from_json(j).params().validate();
  } catch (const std::exception&) {
  }
  try {
    (void)tuner::MachineParams::from_json(j, "params.json");
  } catch (const std::exception&) {
  }
  return 0;
}
