// sandwich-tune: the offline tuner. Shows a machine's TopoTree and searches its service
// configurations for a model. Each subcommand's work is the tuner's (tuner/commands/).
#include <iostream>

#include "common/cli.h"
#include "common/tool.h"
#include "engine/plans/tool_options.h"
#include "plan_command.h"
#include "tuner/commands/calibrate_command.h"
#include "tuner/commands/compare_command.h"
#include "tuner/commands/configs_command.h"
#include "tuner/commands/kernels_command.h"
#include "tuner/commands/survey_command.h"
#include "tuner/commands/topology_command.h"
#include "tuner/link_probe.h"

using namespace sandwich;
using namespace sandwich::tuner;

namespace {

int cmd_topology(int argc, char** argv, int first) {
  TopologyRequest r;
  ArgParser p("sandwich-tune topology", "Print a machine's TopoTree.");
  p.add("--topology", &r.topology, "machine (default: this one)", "T");
  p.add("--dot", &r.dot, "also write the tree as a Graphviz file ('-': stdout)", "FILE");
  p.add_flag("--full", &r.full,
             "print every node (default: two of each run of identical siblings)");
  if (!p.parse(argc, argv, first)) return 0;
  std::cout << topology_report(r);
  return 0;
}

const Subcommand kTopologyCommand{
    "topology", "[--topology T] [--dot FILE] [--full]",
    "print the machine's TopoTree (levels, then the tree); --dot writes it for Graphviz",
    cmd_topology};

void add_common(ArgParser& p, SearchCommandOptions& o) {
  p.add("--topology", &o.setup.topology, "machine (default: this one; see 'sandwich-tune --help')",
        "T");
  p.add("--params", &o.setup.params_file,
        "machine parameters for the simulator (JSON; default: the topology's own, "
        "calibration on this machine, or generic)",
        "FILE");
  p.add("--trace", &o.setup.trace,
        "request lengths: sharegpt (default: $SANDWICH_SHARED/data/traces/sharegpt_lengths.csv), "
        "lmsys (a model of LMSYS-Chat-1M's lengths) or a CSV file",
        "T");
  p.add("--trace-samples", &o.setup.trace_samples, "requests sampled from the trace (default 64)");
  p.option("--seed", "N", "trace sampling seed (default 0)", [&o](const std::string& v) {
    const int64_t s = ArgParser::parse_int("--seed", v);
    if (s < 0) throw CliError("--seed must be >= 0");
    o.setup.seed = static_cast<uint64_t>(s);
  });
  p.add("--decode-batch", &o.decode_batch, "sequences per decode step (default 1)");
  p.add("--prefill-chunk", &o.prefill_chunk, "tokens per prefill step (default 512)");
  p.add_flag("--recalibrate", &o.setup.recalibrate,
             "measure this machine again instead of using the cached calibration");
}

int cmd_configs(int argc, char** argv, int first) {
  ConfigsRequest r;
  ArgParser p("sandwich-tune configs",
              "Search and rank service configurations of a machine for a model.");
  p.add("--model", &r.common.setup.model,
        "preset name (configs/models/) or a model's config.json / file", "M");
  add_common(p, r.common);
  p.add("--phase", &r.phase, "prefill or decode (default: both)", "P");
  p.add("--top-k", &r.search.top_k, "configurations to keep per phase (default 10)", "K");
  p.add("--patience", &r.search.patience,
        "early stopping: evaluations without improvement before a group of "
        "configurations stops (default 8, 0 = off)");
  p.add_flag("--numa-local", &r.numa_local, "only ranks inside one NUMA node");
  p.add_flag("--placement-hash", &r.placement_hash,
             "tell apart trees of the same shape on different PUs "
             "(strided groups); larger search");
  p.add_flag("--json", &r.json, "print JSON (configs in the engine's service-configuration form)");
  p.add("--plan-out", &r.plan_out,
        "also write a plan of the best prefill and decode configuration (this machine; no "
        "kernel table: see 'sandwich-tune plan')",
        "FILE");
  p.add("--evaluator", &r.evaluator,
        "simulator (default) or measured (runs engine steps; this machine only)", "E");
  if (!p.parse(argc, argv, first)) return 0;
  r.command_line = "sandwich-tune";
  for (int i = first - 1; i < argc; ++i) r.command_line += std::string(" ") + argv[i];
  run_configs(r, std::cout, std::cerr);
  return 0;
}

const Subcommand kConfigsCommand{
    "configs", "--model M [--topology T] [--phase prefill|decode] [--top-k K] [--json] ...",
    "search the service configurations and print the best with predicted latencies", cmd_configs};

int cmd_survey(int argc, char** argv, int first) {
  SurveyRequest r;
  ArgParser p("sandwich-tune survey",
              "Search every shipped topology; print the search statistics.");
  p.add("--model", &r.model, "preset or config.json (default llama3-8b)", "M");
  p.add("--patience", &r.patience, "early-stopping patience (default 8)");
  p.add("--decode-batch", &r.decode_batch, "sequences per decode step (default 1)");
  p.add("--hash", &r.hash,
        "structure (default), placement or both: the TopoTree hash of each row's search, "
        "to compare their sizes and times",
        "H");
  p.add_flag("--json", &r.json, "print JSON");
  if (!p.parse(argc, argv, first)) return 0;
  if (r.hash != "structure" && r.hash != "placement" && r.hash != "both")
    throw CliError("--hash must be structure, placement or both, got '" + r.hash + "'");
  if (r.decode_batch < 1) throw CliError("--decode-batch must be at least 1");
  std::cout << survey_report(r);
  return 0;
}

const Subcommand kSurveyCommand{
    "survey", "[--model M] [--hash structure|placement|both] [--json]",
    "search every shipped topology and print the search statistics as a table", cmd_survey};

int cmd_compare(int argc, char** argv, int first) {
  CompareRequest r;
  ArgParser p("sandwich-tune compare",
              "On this machine: rank the configurations with the simulator, measure the same ones "
              "with real "
              "engine steps, and compare the two rankings.");
  p.add("--model", &r.common.setup.model,
        "preset name or a model's config.json (weights are dummy)", "M");
  add_common(p, r.common);
  p.add("--phase", &r.phase, "prefill or decode (default: both)", "P");
  p.add("--top-k", &r.top_k, "the simulator's best K configurations are measured (default 10)",
        "K");
  p.add_flag("--json", &r.json, "print JSON");
  if (!p.parse(argc, argv, first)) return 0;
  std::cout << compare_report(r);
  return 0;
}

const Subcommand kCompareCommand{
    "compare", "--model M [--phase prefill|decode] [--top-k K]",
    "this machine: the simulator's ranking of its configurations against measured engine steps",
    cmd_compare};

int cmd_calibrate(int argc, char** argv, int first) {
  CalibrateRequest r;
  ArgParser p("sandwich-tune calibrate", "Measure this machine for the latency simulator.");
  p.add_flag("--recalibrate", &r.recalibrate, "measure again even if a cached calibration exists");
  p.add_flag("--json", &r.json, "print JSON");
  p.add("--hostfile", &r.hostfile,
        "also measure the link to the nodes of this MPI hostfile (mpirun ping-pong) and record "
        "it",
        "H");
  if (!p.parse(argc, argv, first)) return 0;
  std::cout << calibration_report(r);
  return 0;
}

const Subcommand kCalibrateCommand{
    "calibrate", "[--recalibrate] [--json] [--hostfile H]",
    "measure this machine (bandwidth, FMA/BF16 peaks, GEMM, team sync) for the simulator",
    cmd_calibrate};

int cmd_kernels(int argc, char** argv, int first) {
  KernelsRequest r;
  ArgParser p("sandwich-tune kernels",
              "Tune the GEMM schedules of every GEMM of a model for every M from 1 to --max-m, "
              "measured on this machine's cores as the service configuration pins them.");
  engine::add_model_options(p, r.load);
  p.add("--config", &r.config,
        "service configuration RxT or JSON (default: one rank of all CPUs); the first rank's "
        "CPUs run the measurements",
        "C");
  p.add("--max-m", &r.tuner.max_m, "largest M (tokens of a step) to tune (default 2048)");
  p.add("-o,--output", &r.out, "the schedule table to write (JSON)", "FILE");
  p.add_flag("--resume", &r.resume, "continue the interrupted tuning stored in -o FILE");
  p.add("--window", &r.tuner.window, "sigma: shapes that try every micro-kernel (default 16)");
  p.add("--reuse-threshold", &r.tuner.reuse_threshold,
        "relative spread of the winning slice that counts as stable (default 0.05)");
  p.add("--min-seconds", &r.profiler.min_seconds,
        "least time measured per schedule, after one warm-up call (default 0.002)");
  p.add_flag("--no-attention", &r.no_attention,
             "tune only the GEMMs, not the attention kernels' block sizes");
  if (!p.parse(argc, argv, first)) return 0;
  return run_kernels(r);
}

const Subcommand kKernelsCommand{
    "kernels",
    "--model M [--config RxT] [--max-m 2048] -o FILE [--resume] [--window 16] "
    "[--reuse-threshold 0.05]",
    "tune the GEMM schedules of a model on this machine for every M (a schedule table)",
    cmd_kernels};

}  // namespace

int main(int argc, char** argv) {
  // Hidden: what `calibrate --hostfile` and `plan --hostfile` start under mpirun.
  if (argc == 2 && std::string(argv[1]) == "link-probe") return run_link_probe();
  const Subcommand commands[] = {kTopologyCommand, kConfigsCommand,   kCompareCommand,
                                 kSurveyCommand,   kCalibrateCommand, kKernelsCommand,
                                 kPlanCommand};
  return run_subcommands(
      "sandwich-tune", commands, argc, argv,
      "T: nothing (this machine), a shipped name (see configs/topologies/), a descriptor .json,\n"
      "   an hwloc XML file (lstopo file.xml) or an hwloc synthetic string (\"pack:2 [numa] "
      "core:8 pu:2\");\n"
      "   a descriptor may be a cluster of N such machines and their link (plan --dry-run then "
      "prints\n   the pipeline over them)\n");
}
