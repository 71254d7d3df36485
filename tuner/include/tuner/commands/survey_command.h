#pragma once
// `sandwich-tune survey`: the configuration search on every shipped topology, for the search's
// statistics (trees explored, configurations cut, evaluated, seconds) and best configurations.
#include <string>

namespace sandwich::tuner {

struct SurveyRequest {
  std::string model = "llama3-8b";  // a preset or a config.json
  int patience = 8;
  int decode_batch = 1;            // sequences per decode step the simulator ranks with
  std::string hash = "structure";  // structure, placement or both: the rows' hash modes
  bool json = false;
};

// A table of every topology and phase (or JSON rows), then notes about the inputs.
std::string survey_report(const SurveyRequest& r);

}  // namespace sandwich::tuner
