#include "tuner/kernel_table_tuning.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/cpu_list.h"
#include "engine/plans/schedule_table.h"

namespace sandwich::tuner {
namespace {

nlohmann::json key_json(const kernels::GemmKey& k) {
  return {{"n", k.n},
          {"k", k.k},
          {"dtype", kernels::weight_type_name(k)},
          {"threads", k.threads},
          {"pair", k.pair}};
}

// The resume state: the options that must match, and every group's points so far.
struct TuneState {
  std::string model, config, dtype;
  int64_t max_m = 0;
  int window = 0;
  double reuse_threshold = 0;
  std::vector<GemmGroupResult> groups;  // finished or partial, in tuning order
};

std::string resume_json(const TuneState& s) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GemmGroupResult& g : s.groups) {
    nlohmann::json points = nlohmann::json::array();
    for (const TunedPoint& p : g.points)
      points.push_back({p.m, p.schedule.to_string(), p.seconds, p.how, p.default_seconds});
    groups.push_back({{"key", key_json(g.key)}, {"points", points}});
  }
  return nlohmann::json{{"model", s.model},   {"config", s.config},
                        {"dtype", s.dtype},   {"max_m", s.max_m},
                        {"window", s.window}, {"reuse_threshold", s.reuse_threshold},
                        {"groups", groups}}
      .dump();
}

TuneState parse_resume(const std::string& text, const std::string& file) {
  try {
    const auto j = nlohmann::json::parse(text);
    TuneState s;
    s.model = j.at("model").get<std::string>();
    s.config = j.at("config").get<std::string>();
    s.dtype = j.at("dtype").get<std::string>();
    s.max_m = j.at("max_m").get<int64_t>();
    s.window = j.at("window").get<int>();
    s.reuse_threshold = j.at("reuse_threshold").get<double>();
    for (const auto& g : j.at("groups")) {
      GemmGroupResult r;
      const auto& k = g.at("key");
      r.key = {k.at("n").get<int64_t>(), k.at("k").get<int64_t>(), kernels::DType::BF16,
               k.at("threads").get<int>(), k.at("pair").get<bool>()};
      const std::string type = k.at("dtype").get<std::string>();
      if (!kernels::set_weight_type(r.key, type))
        throw std::invalid_argument("unknown weight type \"" + type + "\"");
      for (const auto& p : g.at("points")) {
        TunedPoint t;
        t.m = p.at(0).get<int64_t>();
        t.schedule = kernels::parse_schedule(p.at(1).get<std::string>());
        t.seconds = p.at(2).get<double>();
        t.how = p.at(3).get<std::string>();
        t.default_seconds = p.at(4).get<double>();
        r.points.push_back(std::move(t));
      }
      s.groups.push_back(std::move(r));
    }
    return s;
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": its resume state is unreadable (" + e.what() +
                             "); tune again without --resume");
  }
}

double gflops_of(const kernels::GemmKey& k, const TunedPoint& p) {
  return p.seconds > 0 ? 2.0 * p.m * k.n * k.k * (k.pair ? 2 : 1) / p.seconds / 1e9 : 0;
}

// A group's points as M ranges: consecutive M with the same schedule merged.
engine::TunedGemm table_entry(const GemmGroupResult& g) {
  engine::TunedGemm t;
  t.n = g.key.n;
  t.k = g.key.k;
  t.dtype = kernels::weight_type_name(g.key);
  t.threads = g.key.threads;
  t.pair = g.key.pair;
  for (const TunedPoint& p : g.points) {
    const std::string sched = p.schedule.to_string();
    if (!t.ranges.empty() && t.ranges.back().schedule == sched && t.ranges.back().m_hi + 1 == p.m &&
        t.ranges.back().how == p.how) {
      t.ranges.back().m_hi = p.m;
      if (t.ranges.back().gflops == 0) t.ranges.back().gflops = gflops_of(g.key, p);
      continue;
    }
    t.ranges.push_back({p.m, p.m, sched, gflops_of(g.key, p), p.how});
  }
  return t;
}

void add(TunerStats& a, const TunerStats& b) {
  a.profiled += b.profiled;
  a.cache_hits += b.cache_hits;
  a.window_saved += b.window_saved;
  a.reuse_saved_m += b.reuse_saved_m;
  a.sparse_saved_m += b.sparse_saved_m;
  a.searched_m += b.searched_m;
  a.confirm_rejected += b.confirm_rejected;
  a.seconds += b.seconds;
}

}  // namespace

namespace {

engine::MachineFingerprint fingerprint_of(const TableTuningSpec& spec) {
  std::vector<int> all_cpus;
  for (const GemmJob& j : spec.gemms)
    for (int c : j.cpus)
      if (std::find(all_cpus.begin(), all_cpus.end(), c) == all_cpus.end()) all_cpus.push_back(c);
  std::sort(all_cpus.begin(), all_cpus.end());
  return engine::this_machine_fingerprint(format_cpu_list(all_cpus));
}

TuneState initial_state(const TableTuningSpec& spec) {
  return {spec.model, spec.config,       spec.dtype,
          spec.max_m, spec.tuner.window, spec.tuner.reuse_threshold,
          {}};
}

// The interrupted table's state, checked against this run's machine and options.
TuneState resume_state(const TableTuningSpec& spec, const std::filesystem::path& out,
                       const engine::MachineFingerprint& machine) {
  const std::string file = out.string();
  TuneState state = initial_state(spec);
  if (!std::filesystem::exists(out))
    throw std::runtime_error("--resume: " + file +
                             " does not exist (run without --resume to start)");
  const engine::ScheduleTable old = engine::read_schedule_table(out);
  const std::string diff = machine.mismatch(old.machine);
  if (!diff.empty())
    throw std::runtime_error(file + " was tuned on another machine (" + diff +
                             "); tune again without --resume");
  if (old.resume_json.empty())
    throw std::runtime_error(file + " is a finished table; nothing to resume");
  TuneState s = parse_resume(old.resume_json, file);
  auto differs = [&](const std::string& what, const std::string& was, const std::string& now) {
    if (was != now)
      throw std::runtime_error(file + " was tuned for " + what + " " + was + ", not " + now +
                               "; rerun with the same options or without --resume");
  };
  differs("model", s.model, state.model);
  differs("configuration", s.config, state.config);
  differs("weights", s.dtype, state.dtype);
  differs("--max-m", std::to_string(s.max_m), std::to_string(state.max_m));
  differs("--window", std::to_string(s.window), std::to_string(state.window));
  differs("--reuse-threshold", std::to_string(s.reuse_threshold),
          std::to_string(state.reuse_threshold));
  state.groups = std::move(s.groups);
  return state;
}

// Polled between measurements: `interrupted` stops a run resumable, `out_of_time` stops it
// finished (the M not tuned take the cost model's schedule). Once stopped it stays stopped.
class StopSignal {
 public:
  StopSignal(const std::function<bool()>& interrupted, const std::function<bool()>& out_of_time)
      : interrupted_(interrupted), out_of_time_(out_of_time) {}
  bool operator()() {
    if (stopped_) return true;
    if (interrupted_ && interrupted_()) {
      stopped_ = true;
      return true;
    }
    if (out_of_time_ && out_of_time_()) {
      cut_ = stopped_ = true;
      return true;
    }
    return false;
  }
  bool interrupted() const { return stopped_ && !cut_; }
  bool stopped() const { return stopped_; }
  bool cut() const { return cut_; }

 private:
  const std::function<bool()>& interrupted_;
  const std::function<bool()>& out_of_time_;
  bool stopped_ = false, cut_ = false;
};

using ProgressFn = std::function<void(const TableTuningProgress&)>;

void write_table(const std::filesystem::path& out, const engine::MachineFingerprint& machine,
                 const TuneState& state, const std::vector<engine::TunedKernel>& attention,
                 bool finished) {
  engine::ScheduleTable t;
  t.machine = machine;
  t.model = state.model;
  t.config = state.config;
  for (const GemmGroupResult& g : state.groups)
    if (!g.points.empty()) t.gemms.push_back(table_entry(g));
  t.tunables = attention;
  if (!finished) t.resume_json = resume_json(state);
  engine::write_schedule_table(t, out);
}

GemmGroupResult* group_of(TuneState& state, const kernels::GemmKey& key) {
  GemmGroupResult* g = nullptr;
  for (auto& x : state.groups)
    if (x.key == key) g = &x;
  return g;
}

// Every GEMM job not yet tuned as far as it asks, in order, into `state`; returns the tuners'
// summed statistics. One tuner (and profiler) per rank CPU set and M limit: a tuner's cache
// lives with it.
TunerStats tune_gemms(const TableTuningSpec& spec, TuneState& state, StopSignal& stop,
                      const ProgressFn& progress) {
  struct Tuner {
    std::unique_ptr<GemmProfiler> profiler;
    std::unique_ptr<GemmTuner> tuner;
    GemmTunerOptions options;
  };
  std::map<std::pair<std::vector<int>, int64_t>, Tuner> tuners;
  auto tuner_for = [&](const GemmJob& j) -> Tuner& {
    Tuner& t = tuners[{j.cpus, j.tune_m}];
    if (!t.tuner) {
      ProfilerOptions po = spec.profiler;
      po.cpus = j.cpus;
      t.options = spec.tuner;
      t.options.max_m = j.tune_m;
      t.profiler = make_machine_profiler(po);
      t.tuner = std::make_unique<GemmTuner>(*t.profiler, t.options);
    }
    return t;
  };
  double total_work = 0;
  for (const GemmJob& j : spec.gemms) {
    GemmTunerOptions o = spec.tuner;
    o.max_m = j.tune_m;
    total_work += tuning_work(j.key, o, 1, j.tune_m);
  }
  double done_work = 0;
  auto stop_fn = [&stop] { return stop(); };
  for (size_t i = 0; i < spec.gemms.size() && !stop.stopped(); ++i) {
    const GemmJob& job = spec.gemms[i];
    GemmGroupResult* prev = group_of(state, job.key);
    Tuner& t = tuner_for(job);
    const double group_work = tuning_work(job.key, t.options, 1, job.tune_m);
    if (prev && static_cast<int64_t>(prev->points.size()) >= job.tune_m) {
      done_work += group_work;
      continue;
    }
    auto on_progress = [&](const TunerProgress& pr) {
      if (!progress) return;
      const double group_done =
          group_work * pr.elapsed_s / std::max(1e-9, pr.elapsed_s + pr.remaining_s);
      TableTuningProgress p;
      p.index = static_cast<int>(i) + 1;
      p.count = static_cast<int>(spec.gemms.size());
      p.what = pr.group;
      p.m = pr.m;
      p.max_m = pr.max_m;
      p.best_gflops = pr.best_gflops;
      p.fraction = (done_work + group_done) / std::max(1e-12, total_work);
      progress(p);
    };
    GemmGroupResult r = t.tuner->tune(job.key, prev, stop_fn, on_progress);
    if (prev)
      *prev = std::move(r);
    else
      state.groups.push_back(std::move(r));
    done_work += group_work;
  }
  TunerStats stats;
  for (const auto& [_, t] : tuners) add(stats, t.tuner->stats());
  return stats;
}

// Attention's block sizes, after the GEMMs (a minute or so; tuned again on --resume).
std::vector<engine::TunedKernel> tune_attention(const TableTuningSpec& spec, StopSignal& stop,
                                                const ProgressFn& progress,
                                                KernelSearchStats* stats) {
  std::vector<engine::TunedKernel> attention;
  const KernelClock clock = timed_runs();
  auto stop_fn = [&stop] { return stop(); };
  for (const AttentionJob& a : spec.attention) {
    std::unique_ptr<TunableKernel> k =
        a.prefill ? make_attention_prefill(a.shape, a.max_m)
                  : make_attention_decode(a.shape, a.max_m, a.decode_context);
    auto on_progress = [&](const KernelProgress& pr) {
      if (!progress) return;
      TableTuningProgress p;
      p.attention = true;
      p.what = pr.kernel;
      p.m = pr.m;
      p.max_m = pr.max_m;
      p.fraction = 1;
      progress(p);
    };
    engine::TunedKernel tk = search_kernel(*k, clock, {}, stop_fn, on_progress, stats);
    if (!tk.ranges.empty()) attention.push_back(std::move(tk));
    if (stop.stopped()) break;
  }
  return attention;
}

// Every job's table covers 1..cover_m: what was not measured runs the cost model's schedule.
// Returns how many of those M were to be tuned.
int64_t cover_with_cost_model(const TableTuningSpec& spec, TuneState& state) {
  int64_t untuned = 0;
  for (const GemmJob& job : spec.gemms) {
    GemmGroupResult* g = group_of(state, job.key);
    if (!g) {
      state.groups.push_back({job.key, {}});
      g = &state.groups.back();
    }
    for (int64_t m = static_cast<int64_t>(g->points.size()) + 1; m <= job.cover_m; ++m) {
      TunedPoint p;
      p.m = m;
      p.schedule = kernels::default_schedule(kernels::shape_at(job.key, m));
      p.how = "untuned";
      g->points.push_back(std::move(p));
      if (m <= job.tune_m) ++untuned;
    }
  }
  return untuned;
}

}  // namespace

void check_resumable(const TableTuningSpec& spec, const std::filesystem::path& out) {
  resume_state(spec, out, fingerprint_of(spec));
}

TableTuningResult tune_schedule_table(const TableTuningSpec& spec, const std::filesystem::path& out,
                                      bool resume, const std::function<bool()>& interrupted,
                                      const std::function<bool()>& out_of_time,
                                      const ProgressFn& progress) {
  const engine::MachineFingerprint machine = fingerprint_of(spec);
  TuneState state = resume ? resume_state(spec, out, machine) : initial_state(spec);
  StopSignal stop(interrupted, out_of_time);
  TableTuningResult result;
  result.stats = tune_gemms(spec, state, stop, progress);
  std::vector<engine::TunedKernel> attention;
  if (!stop.stopped()) attention = tune_attention(spec, stop, progress, &result.attention_stats);
  if (stop.interrupted()) {
    write_table(out, machine, state, attention, false);
    result.status = TableTuningResult::Status::Interrupted;
    result.groups = state.groups;
    return result;
  }
  result.untuned_m = cover_with_cost_model(spec, state);
  result.cut_short = stop.cut();
  result.attention_kernels = attention.size();
  write_table(out, machine, state, attention, true);
  result.groups = state.groups;
  return result;
}

}  // namespace sandwich::tuner
