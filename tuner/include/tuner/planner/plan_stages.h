#pragma once
// The stages of `sandwich-tune plan`, a function each, over the run they share: prepare_plan
// checks the request and loads the machine, the model and an interrupted run's state; then
// search (the simulator's best configurations), measure (their engine steps with the cost
// model's schedules), kernels (one schedule table for every measured candidate), remeasure (the
// tuned candidates' engine steps with their tuned kernels), choose (the pair with the best
// goodput at the SLO, by the tuned figures; the cost model's choice kept beside it) and write.
// A stage that a resumed state records as done is skipped; one stopped by Ctrl-C throws
// PlanInterrupted after saving what it measured (run_plan saves the state and says so).
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/slo_preset.h"
#include "engine/formats/matrix_types.h"
#include "engine/formats/model_config.h"
#include "engine/plans/plan.h"
#include "kernels/dtype.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"
#include "tuner/machine_params.h"
#include "tuner/planner/plan_progress.h"
#include "tuner/planner/plan_request.h"
#include "tuner/planner/plan_state.h"
#include "tuner/time_budget.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {

// The model as the stages need it.
struct PlanModel {
  engine::ModelConfig config;
  kernels::DType weights = kernels::DType::BF16;
  std::string dtype, weights_file;
  // Every matrix's type (the GEMM keys), and the storage as a plan records it
  // (Model::weight_storage, weight_storage_name): "bf16", or "q4_k x 73, ..." named "q4_k_m".
  engine::MatrixTypes types;
  std::string storage, storage_name;
  bool quantized = false;       // some matrices keep quantized blocks
  double bytes_per_weight = 0;  // a loaded model's packed bytes (quantized: under 1)
  bool file_quantized = false;  // --dry-run: the file's header says some matrices are quantized
  // A loaded model's rank counts its weights split over (check_rank_count): a quantized one's
  // shards must hold whole blocks. Empty: not known (dummy weights split wherever heads do).
  std::set<int> rank_counts;
};

// `shape_only`: the shape and the file's header, no weights loaded (a dry run's).
PlanModel describe_plan_model(engine::LoadOptions lo, bool shape_only);

// The request checked, with what it names loaded.
struct PlanSetup {
  PlanRequest request;
  double budget_s = 0;
  MachineDescription machine;
  PlanModel model;
  SloPreset slo;         // scaled by --slo-scale
  int decode_batch = 1;  // of the decode step measured: --decode-batch, at most --max-num-seqs
  std::filesystem::path out, state_file, table_file;
  PlanState state;  // a resumed run's, else a fresh one
};

// Throws CliError for a bad option, std::runtime_error for a state that cannot be resumed.
PlanSetup prepare_plan(const PlanRequest& request);

struct PlanInterrupted {};

class MeasuredEvaluator;

struct PlanRun : PlanSetup {
  // Reads the search's inputs (machine parameters, trace) unless the state is past the search,
  // so that bad input is refused before any stage starts. `stop` is polled between
  // measurements: true stops the run (Ctrl-C).
  PlanRun(PlanSetup setup, std::function<bool()> stop);

  TimeBudget budget;
  PlanProgress progress;
  std::function<bool()> stop;
  WorkloadOptions workload;
  std::vector<std::string> notes;
  // How the search ran where that is worth a line: the placement hash on a machine with a
  // latent group (placement_aware_search.h). Not kept in the state.
  std::vector<std::string> search_notes;
  std::optional<MachineParams> search_params;
  std::optional<RequestTrace> search_trace;
  // The model the measure stage loaded, kept for the remeasure (loading a dummy 1.3B model takes
  // as long as measuring a candidate).
  std::shared_ptr<MeasuredEvaluator> evaluator;

  void save() const;        // the state beside the plan (a dry run writes nothing)
  void check_stop() const;  // throws PlanInterrupted once `stop` says so
};

// 1. The simulator's top_k configurations of each phase; then the notes about the inputs.
void plan_search(PlanRun& run);
// --dry-run's output: the candidates and the pair the simulator alone would choose.
std::string dry_run_report(const PlanRun& run);
// For a cluster (machine.cluster): every pipeline depth P = 1..nodes under the search's
// candidates, its layer split, memory per node and predicted figures, and the P it would choose.
std::string pipeline_report(const PlanRun& run);
// 2. Engine steps of the candidates with the cost model's schedules, cut to fit the
// measurements' share of the budget.
void plan_measure(PlanRun& run);
// 3. The GEMM schedules (and attention blocks) of every measured candidate into the one table
// beside the plan, best simulated first; a key of equal per-rank shapes and threads is tuned
// once. Stops early enough to leave the remeasure the time the measure stage took; records each
// candidate as tuned, partly tuned or untuned.
void plan_kernels(PlanRun& run);
// 4. Engine steps of the (partly) tuned candidates again, with the table installed.
void plan_remeasure(PlanRun& run);
// 5. The measured pair with the highest estimated goodput at the SLO, by the tuned figures
// (the cost model's where a candidate was not measured again); the pair the cost model's
// figures choose is kept beside it.
void plan_choose(PlanRun& run);
// 6. Writes the plan and removes the state; returns the plan written.
engine::Plan plan_write(PlanRun& run);
// What the run printed at the end: the plan, its figures, the budget and how to serve it.
std::string plan_summary(const PlanRun& run, const engine::Plan& plan);

}  // namespace sandwich::tuner
