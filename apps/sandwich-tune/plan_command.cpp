// sandwich-tune plan: from a model and this machine to a plan file, in five stages (search,
// measure, choose, kernels, write), each resumable after Ctrl-C.
#include "plan_command.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/cpu_list.h"
#include "common/json_file.h"
#include "common/slo_preset.h"
#include "engine/formats/file_weights.h"
#include "engine/formats/matrix_types.h"
#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/plans/schedule_table.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "topotree/service_config.h"
#include "tuner/config_search.h"
#include "tuner/goodput_estimate.h"
#include "tuner/kernel_table_tuning.h"
#include "tuner/latency_simulator.h"
#include "tuner/measured_evaluator.h"
#include "tuner/model_gemms.h"
#include "tuner/search_report.h"
#include "tuner/search_setup.h"
#include "tuner/time_budget.h"

namespace sandwich::tuner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
extern "C" void on_plan_sigint(int) {
  g_stop.store(true);
}

// Shares of the budget by the end of each stage: the measurements, then the kernel tuner.
constexpr double kMeasureShare = 0.35, kKernelShare = 0.95;

struct PlanArgs {
  LoadOptions load;
  std::string trace, slo, out, budget_text = "30m", params_file, topology;
  int trace_samples = 64, top_k = 4, prefill_chunk = 512, decode_batch = 16, max_num_seqs = 64;
  int64_t max_m = 0;  // 0: no cap
  double min_seconds = 0.002, slo_scale = 1;
  uint64_t seed = 0;
  bool resume = false, dry_run = false, no_attention = false, quiet = false;
};

// The options a resumed run must share with the interrupted one (the budget may change).
json options_json(const PlanArgs& a) {
  return {{"model", a.load.model},
          {"trace", a.trace},
          {"trace_samples", a.trace_samples},
          {"seed", a.seed},
          {"slo", a.slo},
          {"slo_scale", a.slo_scale},
          {"top_k", a.top_k},
          {"prefill_chunk", a.prefill_chunk},
          {"decode_batch", a.decode_batch},
          {"max_num_seqs", a.max_num_seqs},
          {"max_m", a.max_m},
          {"params", a.params_file},
          {"attention", !a.no_attention}};
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string clock_text(double s) {
  const long t = std::lround(std::max(0.0, s));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

std::string short_config(const topo::ServiceConfig& c) {
  return c.to_string(8);
}

// The progress display: a line rewritten in place when stderr is a terminal; otherwise a line
// when a stage starts and ends and at most one a minute between (logs of a long run show it is
// alive without filling up); nothing with --quiet.
class Progress {
 public:
  Progress(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}
  void stage(int index, const std::string& name, const std::string& what) {
    end_line();
    index_ = index;
    name_ = name;
    stage_start_ = Clock::now();
    last_plain_ = stage_start_;
    if (!quiet_) std::cerr << "[" << index << "/5 " << name << "] " << what << "\n";
  }
  // Step n of total within the stage; `remaining` < 0: estimated from the steps' pace.
  void step(int n, int total, const std::string& what, double remaining = -1) {
    if (quiet_) return;
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - stage_start_).count();
    if (remaining < 0 && n > 0) remaining = elapsed / n * (total - n);
    std::ostringstream os;
    os << "[" << index_ << "/5 " << name_ << "] step " << n << " of " << total << ": " << what
       << "  elapsed " << clock_text(elapsed) << "  remaining ~"
       << (remaining >= 0 ? clock_text(remaining) : std::string("?"));
    if (tty_) {
      std::cerr << "\r\033[K" << os.str() << std::flush;
      open_ = true;
    } else if (now - last_plain_ > std::chrono::seconds(60)) {
      last_plain_ = now;
      std::cerr << os.str() << "\n";
    }
  }
  void done(const std::string& what) {
    end_line();
    if (!quiet_)
      std::cerr << "[" << index_ << "/5 " << name_ << "] done in " << std::fixed
                << std::setprecision(1) << seconds() << " s" << (what.empty() ? "" : ": ") << what
                << "\n";
  }
  void note(const std::string& line) {
    end_line();
    if (!quiet_) std::cerr << line << "\n";
  }
  double seconds() const {
    return std::chrono::duration<double>(Clock::now() - stage_start_).count();
  }

 private:
  void end_line() {
    if (open_) std::cerr << "\n";
    open_ = false;
  }
  bool quiet_, tty_, open_ = false;
  int index_ = 0;
  std::string name_;
  Clock::time_point stage_start_, last_plain_;
};

struct Candidate {
  topo::ServiceConfig config;
  double simulated_ms = 0;           // the phase's figure (prefill: per request; decode: per step)
  double simulated_decode_1_ms = 0;  // decode: one sequence
  std::optional<double> measured_ms, measured_decode_1_ms;
  json to_json() const {
    json j = {{"config", config.to_json()},
              {"short", short_config(config)},
              {"simulated_ms", simulated_ms}};
    if (simulated_decode_1_ms > 0) j["simulated_decode_1_ms"] = simulated_decode_1_ms;
    if (measured_ms) j["measured_ms"] = *measured_ms;
    if (measured_decode_1_ms) j["measured_decode_1_ms"] = *measured_decode_1_ms;
    return j;
  }
  static Candidate from_json(const json& j) {
    Candidate c{topo::service_config_from_json(j.at("config")), j.at("simulated_ms").get<double>()};
    c.simulated_decode_1_ms = j.value("simulated_decode_1_ms", 0.0);
    if (j.contains("measured_ms")) c.measured_ms = j["measured_ms"].get<double>();
    if (j.contains("measured_decode_1_ms"))
      c.measured_decode_1_ms = j["measured_decode_1_ms"].get<double>();
    return c;
  }
};

// Everything a resumed run needs: written beside the plan after every stage and on Ctrl-C.
struct PlanState {
  json options;
  std::vector<std::string> done;  // finished stages
  std::map<std::string, double> seconds;
  std::vector<Candidate> prefill, decode;
  std::vector<LengthPair> trace;
  std::string trace_source, params_source;
  int prefill_samples = 0;
  std::vector<std::string> cuts;  // what the budget cut, for the summary
  json choice;                    // the choose stage's result
  bool kernels_started = false;
  int64_t kernel_cap = -1;  // the M the kernels are tuned up to (0: no cap; -1: not decided)
  bool has(const std::string& s) const {
    return std::find(done.begin(), done.end(), s) != done.end();
  }
  double spent() const {
    double s = 0;
    for (const auto& [_, v] : seconds) s += v;
    return s;
  }
  json to_json() const {
    json p = json::array(), d = json::array(), t = json::array();
    for (const auto& c : prefill) p.push_back(c.to_json());
    for (const auto& c : decode) d.push_back(c.to_json());
    for (const auto& r : trace) t.push_back({r.input, r.output});
    return {{"format", "sandwich-plan-state"},
            {"options", options},
            {"done", done},
            {"seconds", seconds},
            {"prefill", p},
            {"decode", d},
            {"trace", t},
            {"trace_source", trace_source},
            {"params_source", params_source},
            {"prefill_samples", prefill_samples},
            {"cuts", cuts},
            {"choice", choice},
            {"kernels_started", kernels_started},
            {"kernel_cap", kernel_cap}};
  }
  static PlanState from_json(const json& j) {
    if (j.value("format", "") != "sandwich-plan-state")
      throw std::invalid_argument("not a plan state");
    PlanState s;
    s.options = j.at("options");
    s.done = j.at("done").get<std::vector<std::string>>();
    s.seconds = j.at("seconds").get<std::map<std::string, double>>();
    for (const auto& c : j.at("prefill")) s.prefill.push_back(Candidate::from_json(c));
    for (const auto& c : j.at("decode")) s.decode.push_back(Candidate::from_json(c));
    for (const auto& r : j.at("trace")) s.trace.push_back({r.at(0).get<int>(), r.at(1).get<int>()});
    s.trace_source = j.at("trace_source").get<std::string>();
    s.params_source = j.at("params_source").get<std::string>();
    s.prefill_samples = j.at("prefill_samples").get<int>();
    s.cuts = j.at("cuts").get<std::vector<std::string>>();
    s.choice = j.at("choice");
    s.kernels_started = j.at("kernels_started").get<bool>();
    s.kernel_cap = j.at("kernel_cap").get<int64_t>();
    return s;
  }
};

struct Interrupted {};

double mean_input(const std::vector<LengthPair>& t, size_t n, int32_t max_seq_len) {
  n = std::min(n, t.size());
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::min(t[i].input, max_seq_len - 1);
  return n ? s / static_cast<double>(n) : 0;
}

ServiceTimes service_times(const Candidate& p, const Candidate& d, double prefill_tokens,
                           int decode_batch, bool measured) {
  ServiceTimes t;
  t.prefill_ms_per_token = (measured ? *p.measured_ms : p.simulated_ms) / prefill_tokens;
  t.decode_ms_batch = measured ? *d.measured_ms : d.simulated_ms;
  t.decode_ms_1 = measured ? *d.measured_decode_1_ms : d.simulated_decode_1_ms;
  t.decode_batch = decode_batch;
  return t;
}

struct Choice {
  size_t prefill = 0, decode = 0;
  GoodputEstimate goodput;
  double latency_ms = 0;  // one request at no load: prefill + mean output x TPOT
};

// The pair with the highest estimated goodput; ties go to the lower no-load latency.
Choice choose_pair(const std::vector<Candidate>& prefill, const std::vector<Candidate>& decode,
                   const std::vector<LengthPair>& trace, double prefill_tokens, const PlanArgs& a,
                   const SloPreset& slo, bool measured, json* table) {
  std::optional<Choice> best;
  double mean_out = 0;
  for (const auto& r : trace) mean_out += r.output;
  mean_out /= static_cast<double>(trace.size());
  ServingLimits limits;
  limits.max_num_seqs = a.max_num_seqs;
  limits.prefill_chunk = a.prefill_chunk;
  for (size_t i = 0; i < prefill.size(); ++i) {
    if (measured && !prefill[i].measured_ms) continue;
    for (size_t j = 0; j < decode.size(); ++j) {
      if (measured && (!decode[j].measured_ms || !decode[j].measured_decode_1_ms)) continue;
      const ServiceTimes t =
          service_times(prefill[i], decode[j], prefill_tokens, a.decode_batch, measured);
      Choice c{i, j,
               estimate_goodput(t, trace, limits, {slo.ttft_ms, slo.tpot_ms, slo.attainment()}),
               t.prefill_ms_per_token * prefill_tokens + mean_out * t.decode_ms_1};
      if (table)
        table->push_back({{"prefill", short_config(prefill[i].config)},
                          {"decode", short_config(decode[j].config)},
                          {"goodput_rps", c.goodput.rate},
                          {"limited_by", c.goodput.limited_by},
                          {"latency_ms", c.latency_ms}});
      const bool tie = best && std::abs(c.goodput.rate - best->goodput.rate) <=
                                   1e-6 * std::max(c.goodput.rate, best->goodput.rate);
      if (!best || (tie ? c.latency_ms < best->latency_ms : c.goodput.rate > best->goodput.rate))
        best = c;
    }
  }
  if (!best) throw std::runtime_error("no configuration pair was measured");
  return *best;
}

std::string objective_text(const SloPreset& slo) {
  std::ostringstream os;
  os << "goodput: the highest request rate at which the estimated P"
     << std::lround(slo.attainment() * 100) << " TTFT <= " << slo.ttft_ms
     << " ms and TPOT <= " << slo.tpot_ms << " ms (SLO " << slo.name
     << "), from measured step times (tuner/goodput_estimate.h); ties go to the lower latency";
  return os.str();
}

std::string ms_text(double ms) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms < 1 ? 3 : (ms < 100 ? 2 : 1)) << ms;
  return os.str();
}

std::string rate_text(double r) {
  std::ostringstream os;
  os << std::setprecision(3) << r;
  return os.str();
}

struct ModelInfo {
  ModelConfig config;
  kernels::DType weights = kernels::DType::BF16;
  std::string dtype, weights_file;
  // Every matrix's type (the GEMM keys), and the storage as a plan records it
  // (Model::weight_storage, weight_storage_name): "bf16", or "q4_k x 73, ..." named "q4_k_m".
  MatrixTypes types;
  std::string storage, storage_name;
  bool quantized = false;       // some matrices keep quantized blocks
  double bytes_per_weight = 0;  // a loaded model's packed bytes (quantized: under 1)
  bool file_quantized = false;  // --dry-run: the file's header says some matrices are quantized
  // A loaded model's rank counts its weights split over (check_rank_count): a quantized one's
  // shards must hold whole blocks. Empty: not known (dummy weights split wherever heads do).
  std::set<int> rank_counts;
};

ModelInfo describe_model(LoadOptions lo, bool shape_only) {
  ModelInfo m;
  if (lo.load_format == LoadFormat::Dummy || shape_only) {
    m.config = load_model_shape(lo.model, "plan");
    m.weights = lo.dtype == WeightDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
    // A file's own matrices, from its header: a quantized one streams under a byte per weight.
    if (lo.load_format != LoadFormat::Dummy && lo.dtype == WeightDType::Auto)
      if (const auto fw = file_weights(lo.model)) {
        m.bytes_per_weight = fw->bytes_per_weight;
        m.file_quantized = fw->quantized;
        if (!fw->quantized && fw->bytes_per_weight >= 4) m.weights = kernels::DType::F32;
      }
  } else {
    lo.require_tokenizer = false;
    const auto model = load_model(lo);
    m.config = model->config;
    m.weights =
        model->weight_dtype() == WeightDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
    m.weights_file = lo.model;
    m.bytes_per_weight = model->bytes_per_weight;
    m.types = matrix_types(*model);
    m.storage = model->weight_storage;
    m.storage_name = model->weight_storage_name;
    for (int r = 1; r <= std::min(64, m.config.n_kv_heads); ++r) {
      if (m.config.n_kv_heads % r == 0 && rank_count_fits(*model, r)) m.rank_counts.insert(r);
    }
  }
  m.dtype = m.weights == kernels::DType::F32 ? "f32" : "bf16";
  if (m.storage.empty()) {
    m.types = uniform_matrix_types(m.config, m.dtype);
    m.storage = m.storage_name = m.dtype;
  }
  m.quantized = m.storage != m.dtype;
  return m;
}

int run_plan(const PlanArgs& a, const std::string& command_line) {
  const double budget_s = [&] {
    try {
      return parse_duration(a.budget_text);
    } catch (const std::invalid_argument& e) {
      throw CliError(std::string("--budget: ") + e.what());
    }
  }();
  if (a.top_k < 1) throw CliError("--top-k must be at least 1");
  if (a.trace_samples < 1) throw CliError("--trace-samples must be at least 1");
  if (a.prefill_chunk < 1) throw CliError("--prefill-chunk must be at least 1");
  if (a.decode_batch < 1) throw CliError("--decode-batch must be at least 1");
  if (a.max_num_seqs < 1) throw CliError("--max-num-seqs must be at least 1");
  if (a.max_m < 0) throw CliError("--max-m must be at least 1");
  if (!(a.min_seconds >= 0)) throw CliError("--min-seconds must be >= 0");
  if (a.load.model.empty()) throw CliError("plan needs --model M");
  const MachineDescription machine = load_machine(a.topology);
  if (!machine.local && !a.dry_run)
    throw CliError("plan measures this machine; for topology '" + machine.name +
                   "' add --dry-run (the simulator's part only)");
  if (a.dry_run && !a.out.empty()) throw CliError("--dry-run writes no plan; drop -o");
  if (a.dry_run && a.resume) throw CliError("--dry-run has nothing to resume");
  if (!a.dry_run && a.out.empty()) throw CliError("plan needs -o FILE (the plan to write)");
  const std::string slo_name = a.slo.empty() ? "" : a.slo;
  const ModelInfo model = describe_model(a.load, a.dry_run);
  if (!(a.slo_scale > 0)) throw CliError("--slo-scale must be positive");
  SloPreset slo =
      read_slo_preset(slo_name.empty() ? default_slo_preset(model.config.name) : slo_name);
  slo.ttft_ms *= a.slo_scale;
  slo.tpot_ms *= a.slo_scale;
  if (a.slo_scale != 1) slo.name += " x " + rate_text(a.slo_scale);
  const int decode_batch = std::min(a.decode_batch, a.max_num_seqs);

  const fs::path out = a.out;
  const fs::path state_file = a.out + ".state";
  const fs::path table_file =
      a.dry_run ? fs::path() : out.parent_path() / (out.stem().string() + ".schedules.json");
  PlanState st;
  st.options = options_json(a);
  if (a.resume) {
    if (!fs::exists(state_file))
      throw CliError("--resume: " + state_file.string() +
                     " does not exist (nothing was interrupted; run without --resume)");
    try {
      st = PlanState::from_json(read_json_file(state_file));
    } catch (const std::exception& e) {
      throw std::runtime_error(state_file.string() + " is unreadable (" + e.what() +
                               "); plan again without --resume");
    }
    if (st.options != options_json(a))
      throw std::runtime_error(state_file.string() + " was made with other options (" +
                               st.options.dump() + "); rerun with those or without --resume");
  }
  const TimeBudget budget(budget_s, st.spent());
  Progress progress(a.quiet);
  auto save = [&] {
    if (!a.dry_run) write_json_file(st.to_json(), state_file, 1);
  };
  auto check_stop = [&] {
    if (g_stop.load()) throw Interrupted{};
  };
  std::signal(SIGINT, on_plan_sigint);

  WorkloadOptions w;
  w.prefill_chunk = a.prefill_chunk;
  w.decode_batch = decode_batch;
  w.weight_bytes = model.bytes_per_weight > 0             ? model.bytes_per_weight
                   : model.weights == kernels::DType::F32 ? 4
                                                          : 2;
  std::vector<std::string> notes;
  const auto run_start = Clock::now();
  double prefill_tokens = 0;  // mean prompt of the requests the prefill measurements run

  // Bad input (a trace that is not there) is refused before any stage starts.
  std::optional<MachineParams> search_params;
  std::optional<RequestTrace> search_trace;
  if (!st.has("search")) {
    search_params = machine_params_for(machine, a.params_file, false, notes);
    search_trace = request_trace(a.trace, a.trace_samples, a.seed, model.config, notes);
  }

  try {
    // ---- 1. search ------------------------------------------------------------------------
    if (!st.has("search")) {
      progress.stage(1, "search", "simulator-ranked configurations of " + machine.name);
      const MachineParams& params = *search_params;
      const RequestTrace& trace = *search_trace;
      LatencySimulator sim(machine.tree, params, model.config, trace, w);
      WorkloadOptions w1 = w;
      w1.decode_batch = 1;
      LatencySimulator sim1(machine.tree, params, model.config, trace, w1);
      for (Phase ph : {Phase::Prefill, Phase::Decode}) {
        SearchOptions so;
        so.phase = ph;
        so.top_k = a.top_k;
        if (!model.rank_counts.empty())
          so.ranks_fit = [&](int r) { return model.rank_counts.count(r) != 0; };
        const SearchResult r = search_configs(machine.tree, model.config, sim, so);
        for (const RankedConfig& rc : r.ranked) {
          Candidate c{rc.config, rc.prediction.ms};
          if (ph == Phase::Decode) c.simulated_decode_1_ms = sim1.evaluate(rc.config, ph).ms;
          (ph == Phase::Prefill ? st.prefill : st.decode).push_back(std::move(c));
        }
      }
      st.trace = trace.requests;
      st.trace_source = trace.source;
      st.params_source = params.source;
      st.seconds["search"] = progress.seconds();
      st.done.push_back("search");
      progress.done(std::to_string(st.prefill.size()) + " prefill and " +
                    std::to_string(st.decode.size()) + " decode candidates");
      save();
    }
    for (const auto& n : notes) progress.note("note: " + n);

    if (a.dry_run) {
      std::ostringstream os;
      RequestTrace t;
      t.requests = st.trace;
      os << std::fixed << std::setprecision(2);
      os << "topology   " << machine.name
         << (machine.description.empty() || machine.description == machine.name
                 ? ""
                 : ": " + machine.description)
         << "\n           " << machine.tree.leaf_count() << " PUs, " << machine.tree.numa_count()
         << " NUMA nodes; machine parameters: " << st.params_source << "\n";
      if (search_params && search_params->latent_group.active())
        os << "contention latent " << search_params->latent_group.describe() << "\n";
      os << "model      " << model.config.name << " ("
         << (model.file_quantized ? "quantized" : model.dtype);
      if (model.bytes_per_weight > 0) os << ", " << model.bytes_per_weight << " bytes per weight";
      os << ")\n";
      os << "trace      " << st.trace_source << ": mean input " << std::setprecision(0)
         << t.mean_input() << ", output " << t.mean_output() << " tokens\n"
         << std::setprecision(2);
      os << "dry run: the configurations `plan` would measure on that machine (top " << a.top_k
         << " per phase by the latency simulator)\n";
      os << "\nprefill (simulated mean ms per request, chunks of " << a.prefill_chunk << "):\n";
      int i = 0;
      for (const auto& c : st.prefill)
        os << "  " << ++i << "  " << std::left << std::setw(40) << short_config(c.config)
           << std::right << std::setw(12) << c.simulated_ms << "\n";
      os << "\ndecode (simulated ms per step at batch " << decode_batch << " / at batch 1):\n";
      i = 0;
      for (const auto& c : st.decode)
        os << "  " << ++i << "  " << std::left << std::setw(40) << short_config(c.config)
           << std::right << std::setw(12) << c.simulated_ms << std::setw(12)
           << c.simulated_decode_1_ms << "\n";
      const Choice ch = choose_pair(st.prefill, st.decode, st.trace,
                                    mean_input(st.trace, st.trace.size(), model.config.max_seq_len),
                                    a, slo, false, nullptr);
      os << "\nby the simulator alone: prefill " << short_config(st.prefill[ch.prefill].config)
         << ", decode " << short_config(st.decode[ch.decode].config) << "; estimated goodput "
         << rate_text(ch.goodput.rate) << " req/s at SLO " << slo.name << " (limited by "
         << ch.goodput.limited_by << ")\n";
      std::cout << os.str();
      return 0;
    }

    // ---- 2. measure -----------------------------------------------------------------------
    size_t n_prefill = st.prefill.size(), n_decode = st.decode.size();
    if (!st.has("measure")) {
      progress.stage(2, "measure", "engine steps of the candidates on this machine");
      const auto t0 = Clock::now();
      if (st.prefill_samples == 0) {
        // Fit the measurements into their share of the budget, by the simulator's figures:
        // fewer prefill requests first, then fewer candidates.
        const double share = kMeasureShare * budget.total() - budget.used();
        auto cost = [&](int samples, size_t np, size_t nd) {
          double s = 0;
          for (size_t i = 0; i < np; ++i) s += st.prefill[i].simulated_ms * (samples + 1) / 1000;
          for (size_t i = 0; i < nd; ++i)
            s += (st.decode[i].simulated_ms + st.decode[i].simulated_decode_1_ms) * 10 / 1000;
          return s;
        };
        int samples = 8;
        while (samples > 1 && cost(samples, n_prefill, n_decode) > share) samples /= 2;
        while ((n_prefill > 1 || n_decode > 1) && cost(samples, n_prefill, n_decode) > share) {
          if (n_prefill >= n_decode && n_prefill > 1)
            --n_prefill;
          else
            --n_decode;
        }
        st.prefill_samples = samples;
        // The requests prefilled are spread over the trace's prompt lengths (its quantiles),
        // not the first few drawn: their mean prompt sets the per-token time the choice uses.
        std::vector<LengthPair> by_input = st.trace;
        std::stable_sort(
            by_input.begin(), by_input.end(),
            [](const LengthPair& x, const LengthPair& y) { return x.input < y.input; });
        std::vector<LengthPair> picked;
        std::vector<bool> taken(by_input.size(), false);
        for (int k = 0; k < samples && k < static_cast<int>(by_input.size()); ++k) {
          const size_t i =
              static_cast<size_t>((k + 0.5) * static_cast<double>(by_input.size()) / samples);
          taken[i] = true;
          picked.push_back(by_input[i]);
        }
        for (size_t i = 0; i < by_input.size(); ++i)
          if (!taken[i]) picked.push_back(by_input[i]);
        st.trace = std::move(picked);
        if (samples < 8)
          st.cuts.push_back("prefill measured on " + std::to_string(samples) +
                            " trace requests instead of 8");
        if (n_prefill < st.prefill.size() || n_decode < st.decode.size())
          st.cuts.push_back("measured " + std::to_string(n_prefill) + " of " +
                            std::to_string(st.prefill.size()) + " prefill and " +
                            std::to_string(n_decode) + " of " + std::to_string(st.decode.size()) +
                            " decode candidates");
        st.prefill.resize(n_prefill);
        st.decode.resize(n_decode);
      }
      RequestTrace trace;
      trace.requests = st.trace;
      trace.source = st.trace_source;
      MeasureOptions mo;
      mo.max_prefill_requests = st.prefill_samples;
      // Quantized blocks are what runs, and no dummy weights hold them: the file's own.
      mo.real_weights = model.quantized;
      progress.step(0, 1,
                    "loading " + model.config.name +
                        (model.quantized ? " (" + model.storage_name + ")" : " (dummy weights)"));
      MeasuredEvaluator ev(a.load.model, trace, w, mo);
      check_stop();
      // Alternate the phases, best-simulated first: a budget cut leaves both phases' best.
      std::vector<std::pair<bool, size_t>> order;
      for (size_t i = 0; i < std::max(st.prefill.size(), st.decode.size()); ++i) {
        if (i < st.prefill.size()) order.push_back({true, i});
        if (i < st.decode.size()) order.push_back({false, i});
      }
      int n = 0, skipped = 0;
      for (const auto& [is_prefill, i] : order) {
        ++n;
        Candidate& c = is_prefill ? st.prefill[i] : st.decode[i];
        if (c.measured_ms && (is_prefill || c.measured_decode_1_ms)) continue;
        if (i > 0 && budget.past(kMeasureShare)) {
          ++skipped;
          continue;
        }
        progress.step(n - 1, static_cast<int>(order.size()),
                      std::string(is_prefill ? "prefill " : "decode ") + short_config(c.config));
        if (is_prefill) {
          c.measured_ms = ev.evaluate(c.config, Phase::Prefill).ms;
        } else {
          c.measured_ms = ev.evaluate(c.config, Phase::Decode).ms;
          check_stop();
          c.measured_decode_1_ms = ev.evaluate_decode(c.config, 1).ms;
        }
        save();
        check_stop();
      }
      if (skipped > 0)
        st.cuts.push_back(
            std::to_string(skipped) +
            " candidates not measured: the measurements' share of the budget ran out");
      st.seconds["measure"] =
          st.seconds["measure"] + std::chrono::duration<double>(Clock::now() - t0).count();
      st.done.push_back("measure");
      progress.done("");
      save();
    }
    prefill_tokens =
        mean_input(st.trace, static_cast<size_t>(st.prefill_samples), model.config.max_seq_len);

    // ---- 3. choose ------------------------------------------------------------------------
    if (!st.has("choose")) {
      progress.stage(3, "choose", objective_text(slo));
      json pairs = json::array();
      const Choice ch =
          choose_pair(st.prefill, st.decode, st.trace, prefill_tokens, a, slo, true, &pairs);
      st.choice = {{"prefill", ch.prefill},
                   {"decode", ch.decode},
                   {"goodput_rps", ch.goodput.rate},
                   {"limited_by", ch.goodput.limited_by},
                   {"ttft_ms", ch.goodput.at_rate.ttft_ms},
                   {"tpot_ms", ch.goodput.at_rate.tpot_ms},
                   {"batch", ch.goodput.at_rate.batch},
                   {"latency_ms", ch.latency_ms},
                   {"pairs", pairs}};
      st.seconds["choose"] = progress.seconds();
      st.done.push_back("choose");
      progress.done("prefill " + short_config(st.prefill[ch.prefill].config) + ", decode " +
                    short_config(st.decode[ch.decode].config));
      save();
    }
    const Candidate& P = st.prefill.at(st.choice.at("prefill").get<size_t>());
    const Candidate& D = st.decode.at(st.choice.at("decode").get<size_t>());

    // ---- 4. kernels -----------------------------------------------------------------------
    TableTuningResult kernels_result;
    if (!st.has("kernels")) {
      progress.stage(4, "kernels",
                     "GEMM schedules (and attention blocks) for the chosen configurations");
      const auto t0 = Clock::now();
      TableTuningSpec spec;
      spec.model = a.load.model;
      spec.config = "prefill " + short_config(P.config) + "; decode " + short_config(D.config);
      spec.dtype = model.storage;
      spec.tuner.window = GemmTunerOptions{}.window;
      spec.profiler.min_seconds = a.min_seconds;
      // A short budget tunes every GEMM over fewer M rather than a few GEMMs over all; decided
      // once, so that a resumed run continues the same table.
      if (st.kernel_cap < 0) {
        const double share = kKernelShare * budget.total() - budget.used();
        st.kernel_cap = a.max_m;
        if (share < 60 && (st.kernel_cap == 0 || st.kernel_cap > 16)) {
          st.kernel_cap = 16;
          st.cuts.push_back("kernels tuned for M <= 16 (less than a minute left for them)");
        } else if (share < 300 && (st.kernel_cap == 0 || st.kernel_cap > 64)) {
          st.kernel_cap = 64;
          st.cuts.push_back("kernels tuned for M <= 64 (less than 5 minutes left for them)");
        }
      }
      const int64_t cap = st.kernel_cap > 0 ? st.kernel_cap : std::numeric_limits<int64_t>::max();
      spec.max_m = st.kernel_cap;
      auto add_jobs = [&](const topo::ServiceConfig& c, int64_t cover, int64_t head_cover) {
        const auto heads =
            lm_head_gemms(model.config, c.rank_count(), c.threads_per_rank(), model.types);
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
      };
      add_jobs(P.config, a.prefill_chunk, std::min(a.prefill_chunk, a.max_num_seqs));
      add_jobs(D.config, a.max_num_seqs, a.max_num_seqs);
      if (!a.no_attention) {
        spec.attention.push_back(
            {true,
             attention_shape(model.config, P.config.rank_count(), P.config.threads_per_rank()),
             std::min<int64_t>(a.prefill_chunk, cap), 0});
        RequestTrace t;
        t.requests = st.trace;
        spec.attention.push_back(
            {false,
             attention_shape(model.config, D.config.rank_count(), D.config.threads_per_rank()),
             std::min<int64_t>(a.max_num_seqs, cap),
             std::clamp(static_cast<int32_t>(t.mean_decode_context()), 1,
                        model.config.max_seq_len - 2)});
      }
      const bool resume_table = st.kernels_started && fs::exists(table_file);
      st.kernels_started = true;
      save();
      int last_index = 0;
      auto on_progress = [&](const TableTuningProgress& p) {
        std::ostringstream os;
        os << std::fixed << std::setprecision(1);
        if (p.attention) {
          os << "attention " << p.what << " M " << p.m << "/" << p.max_m;
          progress.step(static_cast<int>(spec.gemms.size()), static_cast<int>(spec.gemms.size()),
                        os.str(), 0);
          return;
        }
        last_index = p.index;
        os << p.what << "  M " << p.m << "/" << p.max_m << "  best " << p.best_gflops << " GFLOPS";
        const double elapsed = progress.seconds();
        progress.step(p.index - 1, p.count, os.str(),
                      p.fraction > 0.01 ? elapsed * (1 - p.fraction) / p.fraction : -1);
      };
      kernels_result = tune_schedule_table(
          spec, table_file, resume_table, [] { return g_stop.load(); },
          [&] { return budget.past(kKernelShare); }, on_progress);
      st.seconds["kernels"] =
          st.seconds["kernels"] + std::chrono::duration<double>(Clock::now() - t0).count();
      if (kernels_result.status == TableTuningResult::Status::Interrupted) throw Interrupted{};
      if (kernels_result.cut_short)
        st.cuts.push_back(
            "kernel tuning stopped at the budget: " + std::to_string(kernels_result.untuned_m) +
            " (GEMM, M) points run the cost model's schedule");
      st.done.push_back("kernels");
      int64_t points = 0;
      for (const auto& g : kernels_result.groups) points += static_cast<int64_t>(g.points.size());
      progress.done(std::to_string(spec.gemms.size()) + " GEMM shapes, " +
                    std::to_string(kernels_result.stats.profiled) + " schedules profiled, " +
                    std::to_string(kernels_result.attention_kernels) + " attention kernels");
      save();
      (void)last_index;
    }

    // ---- 5. write -------------------------------------------------------------------------
    progress.stage(5, "write", out.string());
    Plan plan;
    plan.version = kPlanVersion;
    plan.prefill = P.config;
    plan.decode = D.config;
    plan.schedules = table_file;
    plan.model = model_identity(model.config, model.dtype, model.weights_file, model.storage,
                                model.storage_name);
    std::vector<int> cpus;
    for (const auto* c : {&P.config, &D.config})
      for (const auto& r : c->ranks) cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    plan.machine = this_machine_fingerprint(format_cpu_list(cpus));
    plan.created = utc_now();
    plan.command = command_line;
    plan.objective = objective_text(slo);
    plan.prefill_figures = {P.simulated_ms, P.measured_ms.value_or(-1)};
    plan.decode_figures = {D.simulated_ms, D.measured_ms.value_or(-1)};
    json prefill_list = json::array(), decode_list = json::array();
    for (const auto& c : st.prefill) prefill_list.push_back(c.to_json());
    for (const auto& c : st.decode) decode_list.push_back(c.to_json());
    st.seconds["write"] = 0;
    const json details = {
        {"candidates", {{"prefill", prefill_list}, {"decode", decode_list}}},
        {"figures",
         "prefill: mean ms per trace request (chunks of prefill_chunk); decode: ms per step of "
         "decode_batch sequences (measured_decode_1_ms: of one)"},
        {"workload",
         {{"prefill_chunk", a.prefill_chunk},
          {"decode_batch", decode_batch},
          {"max_num_seqs", a.max_num_seqs},
          {"prefill_requests_measured", st.prefill_samples}}},
        {"trace", st.trace_source},
        {"machine_params", st.params_source},
        {"slo",
         {{"name", slo.name},
          {"ttft_ms", slo.ttft_ms},
          {"tpot_ms", slo.tpot_ms},
          {"attainment", slo.attainment()}}},
        {"choice", st.choice},
        {"budget_s", budget.total()},
        {"budget_cuts", st.cuts},
        {"stage_seconds", st.seconds}};
    plan.details_json = details.dump();
    write_plan(plan, out);
    st.seconds["write"] = progress.seconds();
    progress.done("");
    std::error_code ec;
    fs::remove(state_file, ec);

    // ---- the summary ------------------------------------------------------------------------
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    os << "wrote " << out.string() << " (kernel table " << table_file.string() << ")\n";
    os << "model      " << model.config.name << " (" << model.storage_name
       << (model.weights_file.empty() ? ", dummy weights" : ", " + model.weights_file) << ")\n";
    os << "machine    " << plan.machine->cpu << ", CPUs " << format_cpu_list(cpus) << "\n";
    RequestTrace t;
    t.requests = st.trace;
    os << "trace      " << st.trace_source << ": mean input " << std::setprecision(0)
       << t.mean_input() << ", output " << t.mean_output() << " tokens\n"
       << std::setprecision(1);
    os << "objective  " << objective_text(slo) << "\n";
    os << "prefill    " << short_config(P.config) << ": measured "
       << ms_text(P.measured_ms.value_or(-1)) << " ms per request (simulated "
       << ms_text(P.simulated_ms) << "), " << prefill_tokens / P.measured_ms.value_or(1) * 1000
       << " prompt tokens/s\n";
    os << "decode     " << short_config(D.config) << ": measured "
       << ms_text(D.measured_ms.value_or(-1)) << " ms per step of " << decode_batch
       << " (simulated " << ms_text(D.simulated_ms) << "), "
       << decode_batch / D.measured_ms.value_or(1) * 1000 << " tokens/s; one sequence "
       << ms_text(D.measured_decode_1_ms.value_or(-1)) << " ms, "
       << 1000 / D.measured_decode_1_ms.value_or(1) << " tokens/s\n";
    os << "goodput    " << rate_text(st.choice.at("goodput_rps").get<double>())
       << " requests/s estimated (limited by " << st.choice.at("limited_by").get<std::string>()
       << "; there P" << std::lround(slo.attainment() * 100) << " TTFT "
       << st.choice.at("ttft_ms").get<double>() << " ms, TPOT "
       << st.choice.at("tpot_ms").get<double>() << " ms, " << st.choice.at("batch").get<double>()
       << " sequences decoding)\n";
    if (st.choice.at("goodput_rps").get<double>() <= 0)
      os << "           no pair meets the SLO at any rate on this machine (" << slo.name
         << "): the pair with the lowest latency was chosen; --slo-scale loosens the SLO\n";
    os << "stages    ";
    double total = 0;
    for (const char* s : {"search", "measure", "choose", "kernels", "write"}) {
      const double v = st.seconds.count(s) ? st.seconds.at(s) : 0;
      total += v;
      os << " " << s << " " << v << " s,";
    }
    os << " total " << total << " s of a " << duration_text(budget.total()) << " budget\n";
    if (st.cuts.empty()) {
      os << "budget     nothing cut\n";
    } else {
      for (const auto& c : st.cuts) os << "budget     cut: " << c << "\n";
    }
    os << "serve with: sandwichd --model " << shell_quote(a.load.model)
       << (a.load.load_format == LoadFormat::Dummy ? " --load-format dummy" : "") << " --plan "
       << shell_quote(out.string()) << "\n";
    std::cout << os.str();
    (void)run_start;
    return 0;
  } catch (const Interrupted&) {
    save();
    progress.note("interrupted: the finished stages are saved in " + state_file.string() +
                  "; rerun the same command with --resume to continue");
    return 130;
  }
}

int cmd_plan(int argc, char** argv, int first) {
  PlanArgs a;
  ArgParser p("sandwich-tune plan",
              "From a model and this machine to a plan file: search the service configurations "
              "with the simulator, measure the best of each phase with engine steps, choose the "
              "pair with the best estimated goodput at an SLO, tune the kernels of the pair, and "
              "write the plan (serve it with sandwichd --plan FILE). Progress goes to stderr: a "
              "live line on a terminal, else a line per stage (and one a minute).");
  add_model_options(p, a.load);
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
  p.add("--top-k", &a.top_k, "candidates of each phase measured (default 4)", "K");
  p.add("--budget", &a.budget_text,
        "wall time for the whole run, e.g. 30m (default), 900s, 1h; shorter budgets measure "
        "less and tune fewer M",
        "T");
  p.add("-o,--output", &a.out, "the plan to write; its kernel table goes beside it", "FILE");
  p.add_flag("--resume", &a.resume, "continue an interrupted run (its state is in FILE.state)");
  p.add("--topology", &a.topology,
        "another machine, with --dry-run (a shipped name, a descriptor or hwloc XML)", "T");
  p.add_flag("--dry-run", &a.dry_run,
             "run only the simulator's part and print the configurations it would measure");
  p.add("--params", &a.params_file, "machine parameters for the simulator (JSON)", "FILE");
  p.add("--prefill-chunk", &a.prefill_chunk, "prompt tokens per prefill step (default 512)");
  p.add("--decode-batch", &a.decode_batch,
        "sequences of the decode step measured beside one (default 16)");
  p.add("--max-num-seqs", &a.max_num_seqs,
        "sequences decoding together at most: the decode kernels' M range (default 64)");
  p.add("--max-m", &a.max_m, "tune the kernels for M up to this only (default: no limit)");
  p.add("--min-seconds", &a.min_seconds, "least time measured per GEMM schedule (default 0.002)");
  p.add_flag("--no-attention", &a.no_attention, "do not tune the attention kernels' blocks");
  p.add_flag("--quiet", &a.quiet, "no progress on stderr");
  if (!p.parse(argc, argv, first)) return 0;
  std::string command_line = "sandwich-tune";
  for (int i = first - 1; i < argc; ++i) command_line += " " + shell_quote(argv[i]);
  return run_plan(a, command_line);
}

}  // namespace

const Subcommand kPlanCommand{
    "plan",
    "--model M [--trace sharegpt|lmsys|FILE] [--slo PRESET] [--top-k 4] [--budget 30m] -o FILE "
    "[--resume] | --topology T --dry-run",
    "one command from a model and this machine to a plan for sandwichd --plan (configurations, "
    "measured figures, a kernel table)",
    cmd_plan};

}  // namespace sandwich::tuner
