#pragma once
// What `sandwich-tune configs` and `compare` share: the search's inputs, the workload the
// simulator models, and the phases asked for.
#include <string>
#include <vector>

#include "tuner/evaluator.h"
#include "tuner/latency_simulator.h"
#include "tuner/search_setup.h"

namespace sandwich::tuner {

struct SearchCommandOptions {
  SetupOptions setup;
  int decode_batch = 1, prefill_chunk = 512;
};

// Throws CliError for a workload number below 1, then what make_search_setup throws.
SearchSetup command_search_setup(const SearchCommandOptions& o, const std::string& command);
WorkloadOptions command_workload(const SearchCommandOptions& o, const SearchSetup& s);

// --phase: "" (both), "prefill" or "decode"; anything else throws CliError.
std::vector<Phase> phases_named(const std::string& phase);

}  // namespace sandwich::tuner
