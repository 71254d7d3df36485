#include "tuner/commands/search_command.h"

#include "common/cli.h"

namespace sandwich::tuner {

SearchSetup command_search_setup(const SearchCommandOptions& o, const std::string& command) {
  if (o.decode_batch < 1) throw CliError("--decode-batch must be at least 1");
  if (o.prefill_chunk < 1) throw CliError("--prefill-chunk must be at least 1");
  return make_search_setup(o.setup, command);
}

WorkloadOptions command_workload(const SearchCommandOptions& o, const SearchSetup& s) {
  WorkloadOptions w;
  w.decode_batch = o.decode_batch;
  w.prefill_chunk = o.prefill_chunk;
  w.weight_bytes = s.weight_bytes();
  return w;
}

std::vector<Phase> phases_named(const std::string& phase) {
  std::vector<Phase> phases;
  if (phase.empty() || phase == "prefill") phases.push_back(Phase::Prefill);
  if (phase.empty() || phase == "decode") phases.push_back(Phase::Decode);
  if (phases.empty()) throw CliError("--phase must be prefill or decode, got '" + phase + "'");
  return phases;
}

}  // namespace sandwich::tuner
