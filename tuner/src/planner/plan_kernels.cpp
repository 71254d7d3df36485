#include <algorithm>
#include <chrono>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "planner/candidate_order.h"
#include "tuner/kernel_table_tuning.h"
#include "tuner/model_gemms.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// The budget's share used by the end of the remeasure stage; the kernel tuner stops earlier, by
// the time the measure stage's engine steps took (the remeasure runs them again on the model
// the measure stage loaded; a resumed run loads it again).
constexpr double kKernelShare = 0.95;

// The seconds the kernels may use up to, counted as the budget counts (from its start).
double kernel_deadline(const PlanRun& run) {
  const auto it = run.state.seconds.find("measure");
  const double measure = it == run.state.seconds.end() ? 0 : it->second;
  const double load = run.evaluator ? run.state.load_seconds : 0;
  return kKernelShare * run.budget.total() - std::max(0.0, measure - load);
}

// The candidates whose kernels are tuned: the measured ones, in candidate_order.
std::vector<CandidateRef> tuned_candidates(const PlanState& st) {
  std::vector<CandidateRef> v;
  for (const CandidateRef& r : candidate_order(st))
    if (was_measured(candidate_at(st, r), r.prefill)) v.push_back(r);
  return v;
}

// A short budget tunes every GEMM over fewer M rather than a few GEMMs over all; decided once,
// so that a resumed run continues the same table. The time is shared by the candidates' distinct
// per-rank shapes (rank and thread counts).
void decide_kernel_cap(PlanRun& run, const std::vector<CandidateRef>& candidates) {
  PlanState& st = run.state;
  if (st.kernel_cap >= 0) return;
  std::set<std::pair<int, int>> shapes;
  for (const CandidateRef& r : candidates) {
    const topotree::ServiceConfig& c = candidate_at(st, r).config;
    shapes.insert({c.rank_count(), c.threads_per_rank()});
  }
  const double share = (kernel_deadline(run) - run.budget.used()) /
                       static_cast<double>(std::max<size_t>(1, shapes.size()));
  st.kernel_cap = run.request.max_m;
  const std::string per = shapes.size() > 1 ? " per configuration" : "";
  if (share < 60 && (st.kernel_cap == 0 || st.kernel_cap > 16)) {
    st.kernel_cap = 16;
    st.cuts.push_back("kernels tuned for M <= 16 (less than a minute" + per + " left for them)");
  } else if (share < 300 && (st.kernel_cap == 0 || st.kernel_cap > 64)) {
    st.kernel_cap = 64;
    st.cuts.push_back("kernels tuned for M <= 64 (less than 5 minutes" + per + " left for them)");
  }
}

// The GEMMs of configuration `c`, each covering M = 1..cover (the LM head: head_cover) and tuned
// up to `cap`; a key an earlier candidate asked for (equal per-rank shapes and threads) is tuned
// once, over the larger range, where that candidate put it. Returns the keys `c` runs.
std::vector<kernels::GemmKey> add_gemm_jobs(TableTuningSpec& spec, const PlanModel& model,
                                            const topotree::ServiceConfig& c, int64_t cover,
                                            int64_t head_cover, int64_t cap) {
  const auto heads = lm_head_gemms(model.config, c.rank_count(), c.threads_per_rank(), model.types);
  const auto keys = model_gemms(model.config, c.rank_count(), c.threads_per_rank(), model.types);
  for (const auto& key : keys) {
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
  return keys;
}

// Attention of one candidate's ranks, unless a candidate before it has the same shape.
void add_attention_job(TableTuningSpec& spec, AttentionJob job) {
  for (AttentionJob& j : spec.attention) {
    const AttentionShape &a = j.shape, &b = job.shape;
    if (j.prefill == job.prefill && a.head_dim == b.head_dim && a.group == b.group &&
        a.kv_heads == b.kv_heads && a.threads == b.threads) {
      j.max_m = std::max(j.max_m, job.max_m);
      return;
    }
  }
  spec.attention.push_back(std::move(job));
}

struct KernelSpec {
  TableTuningSpec spec;
  std::vector<CandidateRef> candidates;
  std::vector<std::vector<kernels::GemmKey>> keys;  // each candidate's
  size_t keys_asked = 0;                            // summed over the candidates
};

// Every measured candidate's GEMMs (and attention), best simulated first: the tuner takes them
// in this order, so a budget that runs out leaves the worst untuned.
KernelSpec kernel_spec(PlanRun& run) {
  const PlanRequest& a = run.request;
  const PlanModel& model = run.model;
  const PlanState& st = run.state;
  KernelSpec ks;
  ks.candidates = tuned_candidates(st);
  TableTuningSpec& spec = ks.spec;
  spec.model = a.load.model;
  std::string prefill_names, decode_names;
  for (const CandidateRef& r : ks.candidates) {
    std::string& names = r.prefill ? prefill_names : decode_names;
    names += (names.empty() ? "" : ", ") + short_config(candidate_at(st, r).config);
  }
  spec.config = "prefill " + prefill_names + "; decode " + decode_names;
  spec.dtype = model.storage;
  spec.tuner.window = GemmTunerOptions{}.window;
  spec.profiler.min_seconds = a.min_seconds;
  decide_kernel_cap(run, ks.candidates);
  const int64_t kernel_cap = run.state.kernel_cap;
  const int64_t cap = kernel_cap > 0 ? kernel_cap : std::numeric_limits<int64_t>::max();
  spec.max_m = kernel_cap;
  RequestTrace t;
  t.requests = st.trace;
  const int32_t decode_context =
      std::clamp(static_cast<int32_t>(t.mean_decode_context()), 1, model.config.max_seq_len - 2);
  for (const CandidateRef& r : ks.candidates) {
    const topotree::ServiceConfig& c = candidate_at(st, r).config;
    ks.keys.push_back(r.prefill
                          ? add_gemm_jobs(spec, model, c, a.prefill_chunk,
                                          std::min(a.prefill_chunk, a.max_num_seqs), cap)
                          : add_gemm_jobs(spec, model, c, a.max_num_seqs, a.max_num_seqs, cap));
    ks.keys_asked += ks.keys.back().size();
    if (a.no_attention) continue;
    const AttentionShape shape =
        attention_shape(model.config, c.rank_count(), c.threads_per_rank());
    add_attention_job(
        spec, r.prefill ? AttentionJob{true, shape, std::min<int64_t>(a.prefill_chunk, cap), 0}
                        : AttentionJob{false, shape, std::min<int64_t>(a.max_num_seqs, cap),
                                       decode_context});
  }
  return ks;
}

// "tuned" when every M each of the candidate's keys asked to tune was tuned, "untuned" when
// none was, else "partly tuned".
std::string tuned_status(const std::vector<kernels::GemmKey>& keys, const TableTuningSpec& spec,
                         const std::vector<GemmGroupResult>& groups, size_t* keys_tuned = nullptr) {
  size_t full = 0, some = 0;
  for (const kernels::GemmKey& key : keys) {
    const auto job = std::find_if(spec.gemms.begin(), spec.gemms.end(),
                                  [&](const GemmJob& j) { return j.key == key; });
    const auto g = std::find_if(groups.begin(), groups.end(),
                                [&](const GemmGroupResult& x) { return x.key == key; });
    if (job == spec.gemms.end() || g == groups.end()) continue;
    int64_t tuned = 0;
    for (const TunedPoint& p : g->points)
      if (p.m <= job->tune_m && p.how != "untuned") ++tuned;
    full += tuned >= job->tune_m ? 1 : 0;
    some += tuned > 0 ? 1 : 0;
  }
  if (keys_tuned) *keys_tuned = full;
  if (full == keys.size()) return "tuned";
  return some > 0 ? "partly tuned" : "untuned";
}

// Each candidate's status, the report's counts, and a cut line naming what the budget left.
void record_tuning(PlanRun& run, const KernelSpec& ks, const TableTuningResult& result) {
  PlanState& st = run.state;
  std::string untuned, partly;
  for (size_t i = 0; i < ks.candidates.size(); ++i) {
    PlanCandidate& c = candidate_at(st, ks.candidates[i]);
    c.kernels = tuned_status(ks.keys[i], ks.spec, result.groups);
    std::string& list = c.kernels == "untuned" ? untuned : partly;
    if (c.kernels != "tuned")
      list += (list.empty() ? "" : ", ") + candidate_name(st, ks.candidates[i]);
  }
  std::vector<kernels::GemmKey> all;
  for (const GemmJob& j : ks.spec.gemms) all.push_back(j.key);
  size_t keys_tuned = 0;
  tuned_status(all, ks.spec, result.groups, &keys_tuned);
  st.kernel_report = {{"candidates", ks.candidates.size()},
                      {"keys_asked", ks.keys_asked},
                      {"keys_distinct", ks.spec.gemms.size()},
                      {"keys_tuned", keys_tuned},
                      {"attention_kernels", result.attention_kernels},
                      {"schedules_profiled", result.stats.profiled},
                      {"cache_hits", result.stats.cache_hits}};
  if (!untuned.empty() || !partly.empty())
    st.cuts.push_back("kernels tuned best simulated first until the budget ran out; " +
                      (untuned.empty() ? std::string() : "left untuned: " + untuned) +
                      (!untuned.empty() && !partly.empty() ? "; " : "") +
                      (partly.empty() ? std::string() : "partly tuned: " + partly));
}

}  // namespace

void plan_kernels(PlanRun& run) {
  PlanState& st = run.state;
  if (st.has("kernels")) return;
  run.progress.stage(3, "kernels",
                     "GEMM schedules (and attention blocks) of every measured candidate, best "
                     "simulated first");
  const auto t0 = std::chrono::steady_clock::now();
  const KernelSpec ks = kernel_spec(run);
  const TableTuningSpec& spec = ks.spec;
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
  const double deadline = kernel_deadline(run);
  const TableTuningResult result = tune_schedule_table(
      spec, run.table_file, resume_table, run.stop, [&] { return run.budget.used() >= deadline; },
      on_progress);
  st.seconds["kernels"] =
      st.seconds["kernels"] +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (result.status == TableTuningResult::Status::Interrupted) throw PlanInterrupted{};
  if (result.cut_short)
    st.cuts.push_back("kernel tuning stopped at the budget: " + std::to_string(result.untuned_m) +
                      " (GEMM, M) points run the cost model's schedule");
  record_tuning(run, ks, result);
  st.done.push_back("kernels");
  const nlohmann::json& k = st.kernel_report;
  run.progress.done(std::to_string(ks.candidates.size()) + " candidates, " +
                    std::to_string(spec.gemms.size()) + " distinct GEMM shapes of " +
                    std::to_string(ks.keys_asked) + " asked, " +
                    std::to_string(k.at("keys_tuned").get<size_t>()) + " tuned, " +
                    std::to_string(result.stats.profiled) + " schedules profiled, " +
                    std::to_string(result.attention_kernels) + " attention kernels");
  run.save();
}

}  // namespace sandwich::tuner
