#include <algorithm>
#include <chrono>
#include <iomanip>
#include <limits>
#include <sstream>

#include "planner/pair_choice.h"
#include "tuner/kernel_table_tuning.h"
#include "tuner/model_gemms.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// The budget's share used by the end of the kernel tuner.
constexpr double kKernelShare = 0.95;

// A short budget tunes every GEMM over fewer M rather than a few GEMMs over all; decided once,
// so that a resumed run continues the same table.
void decide_kernel_cap(PlanRun& run) {
  PlanState& st = run.state;
  if (st.kernel_cap >= 0) return;
  const double share = kKernelShare * run.budget.total() - run.budget.used();
  st.kernel_cap = run.request.max_m;
  if (share < 60 && (st.kernel_cap == 0 || st.kernel_cap > 16)) {
    st.kernel_cap = 16;
    st.cuts.push_back("kernels tuned for M <= 16 (less than a minute left for them)");
  } else if (share < 300 && (st.kernel_cap == 0 || st.kernel_cap > 64)) {
    st.kernel_cap = 64;
    st.cuts.push_back("kernels tuned for M <= 64 (less than 5 minutes left for them)");
  }
}

// The GEMMs of configuration `c`, each covering M = 1..cover (the LM head: head_cover) and tuned
// up to `cap`; a key both configurations share is tuned once, over the larger range.
void add_gemm_jobs(TableTuningSpec& spec, const PlanModel& model, const topotree::ServiceConfig& c,
                   int64_t cover, int64_t head_cover, int64_t cap) {
  const auto heads = lm_head_gemms(model.config, c.rank_count(), c.threads_per_rank(), model.types);
  for (const auto& key :
       model_gemms(model.config, c.rank_count(), c.threads_per_rank(), model.types)) {
    const bool head = std::find(heads.begin(), heads.end(), key) != heads.end();
    const int64_t want = head ? head_cover : cover;
    auto it = std::find_if(spec.gemms.begin(), spec.gemms.end(),
                           [&](const GemmJob& j) { return j.key == key; });
    if (it == spec.gemms.end()) {
      spec.gemms.push_back({key, std::min(want, cap), want, c.ranks.at(0).cpus});
    } else {
      it->cover_m = std::max(it->cover_m, want);
      it->tune_m = std::min(it->cover_m, cap);
    }
  }
}

TableTuningSpec kernel_spec(PlanRun& run) {
  const PlanRequest& a = run.request;
  const PlanModel& model = run.model;
  const topotree::ServiceConfig& P = chosen_prefill(run.state).config;
  const topotree::ServiceConfig& D = chosen_decode(run.state).config;
  TableTuningSpec spec;
  spec.model = a.load.model;
  spec.config = "prefill " + short_config(P) + "; decode " + short_config(D);
  spec.dtype = model.storage;
  spec.tuner.window = GemmTunerOptions{}.window;
  spec.profiler.min_seconds = a.min_seconds;
  decide_kernel_cap(run);
  const int64_t kernel_cap = run.state.kernel_cap;
  const int64_t cap = kernel_cap > 0 ? kernel_cap : std::numeric_limits<int64_t>::max();
  spec.max_m = kernel_cap;
  add_gemm_jobs(spec, model, P, a.prefill_chunk, std::min(a.prefill_chunk, a.max_num_seqs), cap);
  add_gemm_jobs(spec, model, D, a.max_num_seqs, a.max_num_seqs, cap);
  if (!a.no_attention) {
    spec.attention.push_back({true,
                              attention_shape(model.config, P.rank_count(), P.threads_per_rank()),
                              std::min<int64_t>(a.prefill_chunk, cap), 0});
    RequestTrace t;
    t.requests = run.state.trace;
    spec.attention.push_back({false,
                              attention_shape(model.config, D.rank_count(), D.threads_per_rank()),
                              std::min<int64_t>(a.max_num_seqs, cap),
                              std::clamp(static_cast<int32_t>(t.mean_decode_context()), 1,
                                         model.config.max_seq_len - 2)});
  }
  return spec;
}

}  // namespace

void plan_kernels(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("kernels")) return;
  run.progress.stage(4, "kernels",
                     "GEMM schedules (and attention blocks) for the chosen configurations");
  const auto t0 = std::chrono::steady_clock::now();
  const TableTuningSpec spec = kernel_spec(run);
  const bool resume_table = st.kernels_started && std::filesystem::exists(run.table_file);
  st.kernels_started = true;
  run.save();
  auto on_progress = [&](const TableTuningProgress& p) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    if (p.attention) {
      os << "attention " << p.what << " M " << p.m << "/" << p.max_m;
      run.progress.step(static_cast<int>(spec.gemms.size()), static_cast<int>(spec.gemms.size()),
                        os.str(), 0);
      return;
    }
    os << p.what << "  M " << p.m << "/" << p.max_m << "  best " << p.best_gflops << " GFLOPS";
    const double elapsed = run.progress.seconds();
    run.progress.step(p.index - 1, p.count, os.str(),
                      p.fraction > 0.01 ? elapsed * (1 - p.fraction) / p.fraction : -1);
  };
  const TableTuningResult result = tune_schedule_table(
      spec, run.table_file, resume_table, run.stop, [&] { return run.budget.past(kKernelShare); },
      on_progress);
  st.seconds["kernels"] =
      st.seconds["kernels"] +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (result.status == TableTuningResult::Status::Interrupted) throw PlanInterrupted{};
  if (result.cut_short)
    st.cuts.push_back("kernel tuning stopped at the budget: " + std::to_string(result.untuned_m) +
                      " (GEMM, M) points run the cost model's schedule");
  st.done.push_back("kernels");
  run.progress.done(std::to_string(spec.gemms.size()) + " GEMM shapes, " +
                    std::to_string(result.stats.profiled) + " schedules profiled, " +
                    std::to_string(result.attention_kernels) + " attention kernels");
  run.save();
}

}  // namespace sandwich::tuner
