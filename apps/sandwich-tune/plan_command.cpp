// sandwich-tune plan's command line; the stages are the tuner's (tuner/planner.h).
#include "plan_command.h"

#include "common/cli.h"
#include "engine/plans/tool_options.h"
#include "tuner/planner.h"

namespace sandwich::tuner {
namespace {

int cmd_plan(int argc, char** argv, int first) {
  PlanRequest a;
  ArgParser p("sandwich-tune plan",
              "From a model and this machine to a plan file: search the service configurations "
              "with the simulator, measure the best of each phase with engine steps, tune the "
              "kernels of every one measured (equal per-rank shapes once), measure them again "
              "with their tuned kernels, choose the pair with the best estimated goodput at an "
              "SLO (the pair the cost model's schedules would have chosen is reported beside "
              "it), and write the plan (serve it with sandwichd --plan FILE). Progress goes to "
              "stderr: a live line on a terminal, else a line per stage (and one a minute).");
  engine::add_model_options(p, a.load);
  p.add("--trace", &a.trace,
        "request lengths: sharegpt (default), lmsys (a model of LMSYS-Chat-1M's) or a CSV file",
        "T");
  p.add("--trace-samples", &a.trace_samples, "requests sampled from the trace (default 64)");
  p.option("--seed", "N", "trace sampling seed (default 0)", [&a](const std::string& v) {
    const int64_t s = ArgParser::parse_int("--seed", v);
    if (s < 0) throw CliError("--seed must be >= 0");
    a.seed = static_cast<uint64_t>(s);
  });
  p.add("--slo", &a.slo,
        "SLO preset (configs/slo/) or file the pair is chosen for (default: the model's own "
        "preset, else batched-1.3b)",
        "PRESET");
  p.add("--slo-scale", &a.slo_scale,
        "multiply the SLO's limits (the presets are the paper's, for larger machines; default 1)");
  p.add("--top-k", &a.top_k,
        "candidates of each phase measured and tuned before the choice (default 4)", "K");
  p.add("--budget", &a.budget_text,
        "wall time for the whole run, e.g. 30m (default), 900s, 1h; shorter budgets measure "
        "less, tune fewer M and leave the worst candidates untuned",
        "T");
  p.add("-o,--output", &a.out, "the plan to write; its kernel table goes beside it", "FILE");
  p.add_flag("--resume", &a.resume, "continue an interrupted run (its state is in FILE.state)");
  p.add("--topology", &a.topology,
        "another machine, with --dry-run (a shipped name, a descriptor or hwloc XML)", "T");
  p.add("--hostfile", &a.hostfile,
        "plan a pipeline over the nodes of this MPI hostfile (taken as alike to this machine): "
        "measures the link with an MPI ping-pong and records it in the calibration",
        "H");
  p.add_flag("--dry-run", &a.dry_run,
             "run only the simulator's part and print the configurations it would measure");
  p.add("--params", &a.params_file, "machine parameters for the simulator (JSON)", "FILE");
  p.add("--prefill-chunk", &a.prefill_chunk, "prompt tokens per prefill step (default 512)");
  p.option("--decode-batch", "N",
           "sequences of the decode step measured beside one (default 16; 1 under a "
           "single-sequence SLO)",
           [&](const std::string& v) {
             const int64_t n = ArgParser::parse_int("--decode-batch", v);
             if (n < 1 || n > 1 << 20) throw CliError("--decode-batch must be 1 to 1048576");
             a.decode_batch = static_cast<int>(n);
             a.decode_batch_given = true;
           });
  p.add("--max-num-seqs", &a.max_num_seqs,
        "sequences decoding together at most: the decode kernels' M range (default 64)");
  p.add("--max-m", &a.max_m, "tune the kernels for M up to this only (default: no limit)");
  p.add("--min-seconds", &a.min_seconds, "least time measured per GEMM schedule (default 0.002)");
  p.add_flag("--no-attention", &a.no_attention, "do not tune the attention kernels' blocks");
  p.add_flag("--quiet", &a.quiet, "no progress on stderr");
  if (!p.parse(argc, argv, first)) return 0;
  a.command_line = quoted_command_line(argc, argv, first);
  return run_plan(a);
}

}  // namespace

const Subcommand kPlanCommand{
    "plan",
    "--model M [--trace sharegpt|lmsys|FILE] [--slo PRESET] [--top-k 4] [--budget 30m] -o FILE "
    "[--resume] [--hostfile H] | --topology T --dry-run",
    "one command from a model and this machine to a plan for sandwichd --plan (configurations, "
    "measured figures, a kernel table)",
    cmd_plan};

}  // namespace sandwich::tuner
