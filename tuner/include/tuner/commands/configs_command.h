#pragma once
// `sandwich-tune configs`: a machine's service configurations for a model, searched and ranked
// by the latency simulator (or measured engine steps), printed and optionally written as a plan.
#include <ostream>
#include <string>

#include "tuner/commands/search_command.h"
#include "tuner/config_search.h"

namespace sandwich::tuner {

struct ConfigsRequest {
  SearchCommandOptions common;
  std::string phase;                    // "" : both
  std::string evaluator = "simulator";  // or "measured"
  std::string plan_out;                 // "" : no plan
  bool json = false, numa_local = false, placement_hash = false;
  SearchOptions search;      // top_k and patience as given; the rest is set from the above
  std::string command_line;  // recorded in the plan
};

// Prints the ranking (text or JSON) to `out`, and "wrote FILE" for a plan to `out`, or to `err`
// when `out` holds JSON. Throws CliError for bad options.
void run_configs(const ConfigsRequest& r, std::ostream& out, std::ostream& err);

}  // namespace sandwich::tuner
