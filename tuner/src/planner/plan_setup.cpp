#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "common/cli.h"
#include "common/json_file.h"
#include "planner/pair_choice.h"
#include "tuner/calibration.h"
#include "tuner/link_probe.h"
#include "tuner/planner/plan_stages.h"
#include "tuner/search_setup.h"

namespace sandwich::tuner {
namespace {

namespace fs = std::filesystem;

void check_numbers(const PlanRequest& r) {
  if (r.top_k < 1) throw CliError("--top-k must be at least 1");
  if (r.trace_samples < 1) throw CliError("--trace-samples must be at least 1");
  if (r.prefill_chunk < 1) throw CliError("--prefill-chunk must be at least 1");
  if (r.decode_batch < 1) throw CliError("--decode-batch must be at least 1");
  if (r.max_num_seqs < 1) throw CliError("--max-num-seqs must be at least 1");
  if (r.max_m < 0) throw CliError("--max-m must be at least 1");
  if (!(r.min_seconds >= 0)) throw CliError("--min-seconds must be >= 0");
  if (r.load.model.empty()) throw CliError("plan needs --model M");
}

void check_what_to_write(const PlanRequest& r, const MachineDescription& machine) {
  if (!machine.local && !r.dry_run)
    throw CliError("plan measures this machine; for topology '" + machine.name +
                   "' add --dry-run (the simulator's part only)");
  if (r.dry_run && !r.out.empty()) throw CliError("--dry-run writes no plan; drop -o");
  if (r.dry_run && r.resume) throw CliError("--dry-run has nothing to resume");
  if (!r.dry_run && r.out.empty()) throw CliError("plan needs -o FILE (the plan to write)");
}

SloPreset scaled_slo(const PlanRequest& r, const engine::ModelConfig& model) {
  if (!(r.slo_scale > 0)) throw CliError("--slo-scale must be positive");
  SloPreset slo = read_slo_preset(r.slo.empty() ? default_slo_preset(model.name) : r.slo);
  slo.ttft_ms *= r.slo_scale;
  slo.tpot_ms *= r.slo_scale;
  if (r.slo_scale != 1) slo.name += " x " + rate_text(r.slo_scale);
  return slo;
}

PlanState resumed_state(const PlanRequest& r, const fs::path& state_file) {
  if (!fs::exists(state_file))
    throw CliError("--resume: " + state_file.string() +
                   " does not exist (nothing was interrupted; run without --resume)");
  PlanState st;
  try {
    st = PlanState::from_json(read_json_file(state_file, file_kinds::kPlannerState));
  } catch (const std::exception& e) {
    throw std::runtime_error(state_file.string() + " is unreadable (" + e.what() +
                             "); plan again without --resume");
  }
  if (st.options != resume_options_json(r))
    throw std::runtime_error(state_file.string() + " was made with other options (" +
                             st.options.dump() + "); rerun with those or without --resume");
  return st;
}

// This machine as one node of the hostfile's, with the link measured to the others.
MachineDescription hostfile_machine(const PlanRequest& r) {
  if (!r.topology.empty())
    throw CliError("--hostfile plans for nodes like this machine; drop --topology");
  MachineDescription m = load_machine("");
  const HostfileNodes nodes = read_hostfile(r.hostfile);
  const LinkMeasurement link = measure_link(r.hostfile);
  const std::string hosts = link.hosts.size() == 2 ? link.hosts[0] + " <-> " + link.hosts[1] : "";
  const fs::path file = record_link(m.tree, link.latency_us, link.gbs, r.hostfile, hosts);
  if (!r.quiet)
    std::cerr << "link: " << link.link().describe() << " over " << nodes.nodes << " nodes of "
              << r.hostfile << "; recorded in " << file.string() << "\n";
  m.cluster = Cluster{.nodes = nodes.nodes, .link = link.link()};
  return m;
}

}  // namespace

nlohmann::json resume_options_json(const PlanRequest& r) {
  nlohmann::json j = {{"model", r.load.model},
                      {"trace", r.trace},
                      {"trace_samples", r.trace_samples},
                      {"seed", r.seed},
                      {"slo", r.slo},
                      {"slo_scale", r.slo_scale},
                      {"top_k", r.top_k},
                      {"prefill_chunk", r.prefill_chunk},
                      {"decode_batch", r.decode_batch},
                      {"max_num_seqs", r.max_num_seqs},
                      {"max_m", r.max_m},
                      {"params", r.params_file},
                      {"attention", !r.no_attention}};
  if (!r.hostfile.empty()) j["hostfile"] = r.hostfile;
  return j;
}

PlanSetup prepare_plan(const PlanRequest& given) {
  PlanRequest request = given;
  double budget_s = 0;
  try {
    budget_s = parse_duration(request.budget_text);
  } catch (const std::invalid_argument& e) {
    throw CliError(std::string("--budget: ") + e.what());
  }
  check_numbers(request);
  MachineDescription machine =
      request.hostfile.empty() ? load_machine(request.topology) : hostfile_machine(request);
  check_what_to_write(request, machine);
  PlanModel model = describe_plan_model(request.load, request.dry_run);
  SloPreset slo = scaled_slo(request, model.config);
  if (!request.decode_batch_given && slo.mode == "single-sequence") request.decode_batch = 1;
  const fs::path out = request.out;
  const fs::path table_file =
      request.dry_run ? fs::path() : out.parent_path() / (out.stem().string() + ".schedules.json");
  PlanSetup s{request,
              budget_s,
              std::move(machine),
              std::move(model),
              std::move(slo),
              std::min(request.decode_batch, request.max_num_seqs),
              out,
              request.out + ".state",
              table_file,
              {}};
  s.state.options = resume_options_json(request);
  if (request.resume) s.state = resumed_state(request, s.state_file);
  return s;
}

PlanRun::PlanRun(PlanSetup setup, std::function<bool()> stop_requested)
    : PlanSetup(std::move(setup)),
      budget(budget_s, state.spent()),
      progress(request.quiet),
      stop(std::move(stop_requested)) {
  workload.prefill_chunk = request.prefill_chunk;
  workload.decode_batch = decode_batch;
  workload.weight_bytes = model.bytes_per_weight > 0             ? model.bytes_per_weight
                          : model.weights == kernels::DType::F32 ? 4
                                                                 : 2;
  // Bad input (a trace that is not there) is refused before any stage starts.
  if (!state.has("search")) {
    search_params = machine_params_for(machine, request.params_file, false, notes);
    search_trace =
        request_trace(request.trace, request.trace_samples, request.seed, model.config, notes);
  }
}

void PlanRun::save() const {
  if (!request.dry_run) write_json_file(state.to_json(), state_file, 1);
}

void PlanRun::check_stop() const {
  if (stop && stop()) throw PlanInterrupted{};
}

}  // namespace sandwich::tuner
