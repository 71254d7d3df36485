#pragma once
// `sandwich-tune compare`: on this machine, the simulator's ranking of the best configurations
// against the ranking of the same ones by measured engine steps.
#include <string>

#include "tuner/commands/search_command.h"

namespace sandwich::tuner {

struct CompareRequest {
  CompareRequest() { common.setup.trace_samples = 4; }
  SearchCommandOptions common;
  std::string phase;  // "" : both
  int top_k = 10;
  bool json = false;
};

// The two rankings side by side with their agreement (text or JSON). Throws CliError for bad
// options, among them any topology (it measures this machine).
std::string compare_report(const CompareRequest& r);

}  // namespace sandwich::tuner
