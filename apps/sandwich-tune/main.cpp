// sandwich-tune: the offline tuner. Shows a machine's TopoTree and searches its service
// configurations for a model.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/cpu_list.h"
#include "common/json_file.h"
#include "common/paths.h"
#include "common/tool.h"
#include "engine/formats/matrix_types.h"
#include "engine/formats/model.h"
#include "engine/formats/model_config.h"
#include "engine/plans/plan.h"
#include "engine/plans/schedule_table.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "plan_command.h"
#include "topotree/hwloc_loader.h"
#include "topotree/service_config.h"
#include "topotree/tree_render.h"
#include "tuner/attention_tuning.h"
#include "tuner/calibration.h"
#include "tuner/config_search.h"
#include "tuner/gemm_tuner.h"
#include "tuner/kernel_table_tuning.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"
#include "tuner/measured_evaluator.h"
#include "tuner/model_gemms.h"
#include "tuner/search_report.h"
#include "tuner/search_setup.h"
#include "tuner/trace_sampler.h"

using namespace sandwich;
using namespace sandwich::engine;
using namespace sandwich::tuner;

namespace {

int cmd_topology(int argc, char** argv, int first) {
  std::string topology, dot;
  bool full = false;
  ArgParser p("sandwich-tune topology", "Print a machine's TopoTree.");
  p.add("--topology", &topology, "machine (default: this one)", "T");
  p.add("--dot", &dot, "also write the tree as a Graphviz file ('-': stdout)", "FILE");
  p.add_flag("--full", &full, "print every node (default: two of each run of identical siblings)");
  if (!p.parse(argc, argv, first)) return 0;
  const MachineDescription m = load_machine(topology);
  std::ostringstream os;
  os << "topology  " << m.name;
  if (!m.description.empty() && m.description != m.name) os << ": " << m.description;
  os << "\nsource    " << m.source << "\n";
  os << "PUs       " << m.tree.leaf_count() << " in " << m.tree.numa_count() << " NUMA node"
     << (m.tree.numa_count() == 1 ? "" : "s") << "\n";
  for (const auto& n : m.notes) os << "note      " << n << "\n";
  os << "\n" << topotree::level_table(m.tree) << "\n" << topotree::text_tree(m.tree, full ? 0 : 2);
  if (!dot.empty()) {
    const std::string graph = topotree::dot_graph(m.tree, m.name);
    if (dot == "-") {
      std::cout << graph;
      return 0;
    }
    std::ofstream out(dot);
    if (!out || !(out << graph)) throw std::runtime_error("cannot write " + dot);
    os << "\nwrote " << dot << " (render with: dot -Tsvg " << dot << " -o tree.svg)\n";
  }
  std::cout << os.str();
  return 0;
}

const Subcommand kTopologyCommand{
    "topology", "[--topology T] [--dot FILE] [--full]",
    "print the machine's TopoTree (levels, then the tree); --dot writes it for Graphviz",
    cmd_topology};

struct CommonOptions {
  std::string topology, model, params_file, trace_file;
  int trace_samples = 64, decode_batch = 1, prefill_chunk = 512;
  uint64_t seed = 0;
  bool recalibrate = false;
};

void add_common(ArgParser& p, CommonOptions& o) {
  p.add("--topology", &o.topology, "machine (default: this one; see 'sandwich-tune --help')", "T");
  p.add("--params", &o.params_file,
        "machine parameters for the simulator (JSON; default: the topology's own, "
        "calibration on this machine, or generic)",
        "FILE");
  p.add("--trace", &o.trace_file,
        "request lengths: sharegpt (default: $SANDWICH_SHARED/data/traces/sharegpt_lengths.csv), "
        "lmsys (a model of LMSYS-Chat-1M's lengths) or a CSV file",
        "T");
  p.add("--trace-samples", &o.trace_samples, "requests sampled from the trace (default 64)");
  p.option("--seed", "N", "trace sampling seed (default 0)", [&o](const std::string& v) {
    const int64_t s = ArgParser::parse_int("--seed", v);
    if (s < 0) throw CliError("--seed must be >= 0");
    o.seed = static_cast<uint64_t>(s);
  });
  p.add("--decode-batch", &o.decode_batch, "sequences per decode step (default 1)");
  p.add("--prefill-chunk", &o.prefill_chunk, "tokens per prefill step (default 512)");
  p.add_flag("--recalibrate", &o.recalibrate,
             "measure this machine again instead of using the cached calibration");
}

SearchSetup setup(const CommonOptions& o, const std::string& command) {
  if (o.decode_batch < 1) throw CliError("--decode-batch must be at least 1");
  if (o.prefill_chunk < 1) throw CliError("--prefill-chunk must be at least 1");
  SetupOptions so;
  so.topology = o.topology;
  so.model = o.model;
  so.params_file = o.params_file;
  so.trace = o.trace_file;
  so.trace_samples = o.trace_samples;
  so.seed = o.seed;
  so.recalibrate = o.recalibrate;
  return make_search_setup(so, command);
}

int cmd_configs(int argc, char** argv, int first) {
  CommonOptions o;
  std::string phase;
  bool json = false, numa_local = false, placement_hash = false;
  SearchOptions so;
  ArgParser p("sandwich-tune configs",
              "Search and rank service configurations of a machine for a model.");
  p.add("--model", &o.model, "preset name (configs/models/) or a model's config.json / file", "M");
  add_common(p, o);
  p.add("--phase", &phase, "prefill or decode (default: both)", "P");
  p.add("--top-k", &so.top_k, "configurations to keep per phase (default 10)", "K");
  p.add("--patience", &so.patience,
        "early stopping: evaluations without improvement before a group of "
        "configurations stops (default 8, 0 = off)");
  p.add_flag("--numa-local", &numa_local, "only ranks inside one NUMA node");
  p.add_flag("--placement-hash", &placement_hash,
             "tell apart trees of the same shape on different PUs "
             "(strided groups); larger search");
  p.add_flag("--json", &json, "print JSON (configs in the engine's service-configuration form)");
  std::string plan_out;
  p.add("--plan-out", &plan_out,
        "also write a plan of the best prefill and decode configuration (this machine; no "
        "kernel table: see 'sandwich-tune plan')",
        "FILE");
  std::string evaluator = "simulator";
  p.add("--evaluator", &evaluator,
        "simulator (default) or measured (runs engine steps; this machine only)", "E");
  if (!p.parse(argc, argv, first)) return 0;
  if (evaluator != "simulator" && evaluator != "measured")
    throw CliError("--evaluator must be simulator or measured, got '" + evaluator + "'");
  std::vector<Phase> phases;
  if (phase.empty() || phase == "prefill") phases.push_back(Phase::Prefill);
  if (phase.empty() || phase == "decode") phases.push_back(Phase::Decode);
  if (phases.empty()) throw CliError("--phase must be prefill or decode, got '" + phase + "'");
  if (so.top_k < 1) throw CliError("--top-k must be at least 1");
  if (so.patience < 0) throw CliError("--patience must be >= 0");
  so.numa_local = numa_local;
  so.hash = placement_hash ? topotree::HashMode::Placement : topotree::HashMode::Structure;

  if (!plan_out.empty() && !phase.empty())
    throw CliError("--plan-out needs both phases; drop --phase");
  SearchSetup s = setup(o, "configs");
  if (!plan_out.empty() && !s.machine.local)
    throw CliError("--plan-out writes a plan for this machine; drop --topology '" + s.machine.name +
                   "'");
  WorkloadOptions w;
  w.decode_batch = o.decode_batch;
  w.prefill_chunk = o.prefill_chunk;
  w.weight_bytes = s.weight_bytes();
  LatencySimulator sim(s.machine.tree, s.params, s.model, s.trace, w);
  std::unique_ptr<MeasuredEvaluator> measured;
  if (evaluator == "measured") {
    if (!s.machine.local)
      throw CliError(
          "the measured evaluator runs the engine on this machine; it cannot measure topology '" +
          s.machine.name + "' (drop --topology or use --evaluator simulator)");
    MeasureOptions mo;
    mo.real_weights = s.quantized_file();
    measured = std::make_unique<MeasuredEvaluator>(o.model, s.trace, w, mo);
  }
  ConfigEvaluator& ev = measured ? static_cast<ConfigEvaluator&>(*measured) : sim;
  // A plan is written for a weights file's own type, and only with rank counts its weights split
  // over (a quantized file's whole blocks): the file is loaded before the search.
  std::unique_ptr<engine::Model> weights;
  if (!plan_out.empty() && std::filesystem::is_regular_file(o.model) &&
      std::filesystem::path(o.model).extension() != ".json") {
    engine::LoadOptions lo;
    lo.model = o.model;
    lo.require_tokenizer = false;
    weights = engine::load_model(lo);
  }
  if (measured)
    so.ranks_fit = [&](int r) { return measured->ranks_fit(r); };
  else if (weights)
    so.ranks_fit = [&](int r) { return engine::rank_count_fits(*weights, r); };
  std::vector<SearchResult> results;
  for (Phase ph : phases) {
    so.phase = ph;
    results.push_back(search_configs(s.machine.tree, s.model, ev, so));
  }
  ReportContext ctx{&s.machine,       &s.model,
                    ev.name(),        measured ? "none (measured)" : s.params.source,
                    trace_line(s, w), s.notes};
  if (!measured) ctx.contention = sim.latent_group_summary();
  if (json) {
    std::cout << report_json(ctx, results, s.params.to_json()).dump(2) << "\n";
  } else {
    std::cout << report_header(ctx);
    ConfigNote note;
    if (!ctx.contention.empty())
      note = [&sim](const topotree::ServiceConfig& c) {
        return "busiest latent group: " + std::to_string(sim.busiest_latent_group(c)) + " of " +
               std::to_string(sim.params().latent_group.cores) + " cores";
      };
    for (const auto& r : results) std::cout << report_text(r, note);
  }
  if (!plan_out.empty()) {
    engine::Plan plan;
    plan.version = engine::kPlanVersion;
    const RankedConfig& pf = results.at(0).ranked.front();
    const RankedConfig& dc = results.at(1).ranked.front();
    plan.prefill = pf.config;
    plan.decode = dc.config;
    // A weights file says its own type (dummy weights of a preset are BF16).
    std::string dtype = "bf16", storage, storage_name;
    if (weights) {
      if (weights->weight_dtype() == engine::WeightDType::F32) dtype = "f32";
      storage = weights->weight_storage;
      storage_name = weights->weight_storage_name;
    }
    plan.model = engine::model_identity(
        s.model, dtype, std::filesystem::exists(o.model) ? o.model : "", storage, storage_name);
    std::vector<int> cpus;
    for (const auto* c : {&pf.config, &dc.config})
      for (const auto& r : c->ranks) cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    plan.machine = engine::this_machine_fingerprint(format_cpu_list(cpus));
    const bool simulated = !measured;
    (simulated ? plan.prefill_figures.simulated_ms : plan.prefill_figures.measured_ms) =
        pf.prediction.ms;
    (simulated ? plan.decode_figures.simulated_ms : plan.decode_figures.measured_ms) =
        dc.prediction.ms;
    {
      const std::time_t t = std::time(nullptr);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      plan.created = buf;
    }
    plan.command = "sandwich-tune";
    for (int i = first - 1; i < argc; ++i) plan.command += std::string(" ") + argv[i];
    plan.objective = "the lowest " + ev.name() +
                     " figure of each phase (mean prefill ms per request; ms per decode step of " +
                     std::to_string(o.decode_batch) + "); no kernel table";
    plan.details_json = report_json(ctx, results, s.params.to_json()).dump();
    engine::write_plan(plan, plan_out);
    (json ? std::cerr : std::cout) << "wrote " << plan_out << " (prefill " << pf.config.to_string(8)
                                   << ", decode " << dc.config.to_string(8) << ")\n";
  }
  return 0;
}

const Subcommand kConfigsCommand{
    "configs", "--model M [--topology T] [--phase prefill|decode] [--top-k K] [--json] ...",
    "search the service configurations and print the best with predicted latencies", cmd_configs};

int cmd_survey(int argc, char** argv, int first) {
  std::string model_name = "llama3-8b";
  bool json = false;
  int patience = 8;
  ArgParser p("sandwich-tune survey",
              "Search every shipped topology; print the search statistics.");
  p.add("--model", &model_name, "preset or config.json (default llama3-8b)", "M");
  p.add("--patience", &patience, "early-stopping patience (default 8)");
  p.add_flag("--json", &json, "print JSON");
  if (!p.parse(argc, argv, first)) return 0;
  const engine::ModelConfig model = load_model_shape(model_name, "survey");
  std::vector<std::string> notes;
  CommonOptions o;
  const RequestTrace trace = request_trace("", o.trace_samples, o.seed, model, notes);
  nlohmann::json all = nlohmann::json::array();
  std::ostringstream os;
  os << "model " << model.name << ", " << trace.source << "\n"
     << std::left << std::setw(26) << "topology" << std::right << std::setw(5) << "PUs"
     << std::setw(6) << "NUMA" << std::setw(9) << "phase" << std::setw(8) << "trees" << std::setw(8)
     << "(all)" << std::setw(8) << "(rem)" << std::setw(8) << "xforms" << std::setw(8) << "dedup"
     << std::setw(8) << "pruned" << std::setw(8) << "cut" << std::setw(8) << "dup" << std::setw(8)
     << "filt" << std::setw(8) << "early" << std::setw(8) << "eval" << std::setw(9) << "seconds"
     << "  best\n";
  for (const auto& name : shipped_topology_names()) {
    const MachineDescription m = load_machine(name);
    LatencySimulator sim(m.tree, m.params.value_or(MachineParams{}), model, trace);
    for (Phase ph : {Phase::Prefill, Phase::Decode}) {
      SearchOptions so;
      so.phase = ph;
      so.patience = patience;
      const SearchResult r = search_configs(m.tree, model, sim, so);
      const SearchStats& st = r.stats;
      const auto& best = r.ranked.front();
      std::ostringstream b;
      b << best.config.rank_count() << "x" << best.config.threads_per_rank() << " " << std::fixed
        << std::setprecision(2) << best.prediction.ms << " ms";
      os << std::left << std::setw(26) << name << std::right << std::setw(5) << m.tree.leaf_count()
         << std::setw(6) << m.tree.numa_count() << std::setw(9) << phase_name(ph) << std::setw(8)
         << st.trees.explored() << std::setw(8) << st.trees.group_trees << std::setw(8)
         << st.trees.remove_trees << std::setw(8) << st.trees.transforms << std::setw(8)
         << st.trees.deduplicated << std::setw(8) << st.trees.pruned << std::setw(8)
         << st.configs_cut << std::setw(8) << st.configs_deduplicated << std::setw(8)
         << st.configs_filtered << std::setw(8) << st.configs_early_stopped << std::setw(8)
         << st.configs_evaluated << std::setw(9) << std::fixed << std::setprecision(3) << st.seconds
         << "  " << b.str() << "\n";
      nlohmann::json row = {{"topology", name},
                            {"phase", phase_name(ph)},
                            {"pus", m.tree.leaf_count()},
                            {"best", best.config.to_string(2)},
                            {"best_ms", best.prediction.ms}};
      row.update(stats_json(st));
      all.push_back(row);
    }
  }
  if (json) {
    std::cout << all.dump(2) << "\n";
  } else {
    std::cout << os.str();
    for (const auto& n : notes) std::cout << "note: " << n << "\n";
  }
  return 0;
}

const Subcommand kSurveyCommand{
    "survey", "[--model M] [--json]",
    "search every shipped topology and print the search statistics as a table", cmd_survey};

// Kendall's tau-b between two orderings of the same items (1: same order, -1: reversed).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double x = a[i] - a[j], y = b[i] - b[j];
      if (x == 0 && y == 0) continue;
      if (x == 0)
        ++ties_a;
      else if (y == 0)
        ++ties_b;
      else if ((x > 0) == (y > 0))
        ++concordant;
      else
        ++discordant;
    }
  }
  const double n =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return n > 0 ? (concordant - discordant) / n : 1.0;
}

int cmd_compare(int argc, char** argv, int first) {
  CommonOptions o;
  o.trace_samples = 4;
  std::string phase;
  int top_k = 10;
  bool json = false;
  ArgParser p("sandwich-tune compare",
              "On this machine: rank the configurations with the simulator, measure the same ones "
              "with real "
              "engine steps, and compare the two rankings.");
  p.add("--model", &o.model, "preset name or a model's config.json (weights are dummy)", "M");
  add_common(p, o);
  p.add("--phase", &phase, "prefill or decode (default: both)", "P");
  p.add("--top-k", &top_k, "the simulator's best K configurations are measured (default 10)", "K");
  p.add_flag("--json", &json, "print JSON");
  if (!p.parse(argc, argv, first)) return 0;
  if (!o.topology.empty()) throw CliError("compare measures this machine; drop --topology");
  std::vector<Phase> phases;
  if (phase.empty() || phase == "prefill") phases.push_back(Phase::Prefill);
  if (phase.empty() || phase == "decode") phases.push_back(Phase::Decode);
  if (phases.empty()) throw CliError("--phase must be prefill or decode, got '" + phase + "'");
  if (top_k < 1) throw CliError("--top-k must be at least 1");
  SearchSetup s = setup(o, "compare");
  WorkloadOptions w;
  w.decode_batch = o.decode_batch;
  w.prefill_chunk = o.prefill_chunk;
  w.weight_bytes = s.weight_bytes();
  LatencySimulator sim(s.machine.tree, s.params, s.model, s.trace, w);
  MeasureOptions mo;
  mo.real_weights = s.quantized_file();
  MeasuredEvaluator measured(o.model, s.trace, w, mo);
  ReportContext ctx{&s.machine,      &s.model,         "latency simulator vs " + measured.name(),
                    s.params.source, trace_line(s, w), s.notes};
  ctx.contention = sim.latent_group_summary();
  nlohmann::json out = nlohmann::json::array();
  std::ostringstream os;
  os << report_header(ctx);
  for (Phase ph : phases) {
    SearchOptions so;
    so.phase = ph;
    so.top_k = top_k;
    so.patience = 0;
    so.ranks_fit = [&](int r) { return measured.ranks_fit(r); };
    const SearchResult r = search_configs(s.machine.tree, s.model, sim, so);
    std::vector<double> simulated, real;
    for (const auto& rc : r.ranked) {
      simulated.push_back(rc.prediction.ms);
      real.push_back(measured.evaluate(rc.config, ph).ms);
    }
    std::vector<size_t> by_real(real.size());
    for (size_t i = 0; i < by_real.size(); ++i) by_real[i] = i;
    std::stable_sort(by_real.begin(), by_real.end(),
                     [&](size_t a, size_t b) { return real[a] < real[b]; });
    os << "\n"
       << phase_name(ph) << " ("
       << (ph == Phase::Prefill ? "mean prefill ms per request" : "ms per decode step")
       << "):\n  config            simulated  rank   measured  rank\n";
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const size_t real_rank =
          static_cast<size_t>(std::find(by_real.begin(), by_real.end(), i) - by_real.begin()) + 1;
      std::ostringstream shape;
      shape << r.ranked[i].config.rank_count() << " x " << r.ranked[i].config.threads_per_rank()
            << " "
            << r.ranked[i].config.to_string(2).substr(r.ranked[i].config.to_string(2).find(' ') +
                                                      1);
      os << "  " << std::left << std::setw(16) << shape.str() << std::right << std::fixed
         << std::setprecision(2) << std::setw(11) << simulated[i] << std::setw(6) << i + 1
         << std::setw(11) << real[i] << std::setw(6) << real_rank << "\n";
      rows.push_back({{"config", r.ranked[i].config.to_string(8)},
                      {"simulated_ms", simulated[i]},
                      {"measured_ms", real[i]},
                      {"simulated_rank", i + 1},
                      {"measured_rank", real_rank}});
    }
    const double tau = kendall_tau(simulated, real);
    os << "  agreement: Kendall tau " << std::setprecision(2) << tau << ", best configuration "
       << (by_real.front() == 0 ? "the same" : "differs") << "\n";
    out.push_back({{"phase", phase_name(ph)},
                   {"configs", rows},
                   {"kendall_tau", tau},
                   {"same_best", by_real.front() == 0}});
  }
  if (json) {
    std::cout << nlohmann::json{{"params", s.params.to_json()},
                                {"trace", ctx.trace},
                                {"phases", out}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << os.str();
  }
  return 0;
}

const Subcommand kCompareCommand{
    "compare", "--model M [--phase prefill|decode] [--top-k K]",
    "this machine: the simulator's ranking of its configurations against measured engine steps",
    cmd_compare};

int cmd_calibrate(int argc, char** argv, int first) {
  bool recalibrate = false, json = false;
  ArgParser p("sandwich-tune calibrate", "Measure this machine for the latency simulator.");
  p.add_flag("--recalibrate", &recalibrate, "measure again even if a cached calibration exists");
  p.add_flag("--json", &json, "print JSON");
  if (!p.parse(argc, argv, first)) return 0;
  const topotree::LoadedTopology& local = topotree::this_machine();
  std::filesystem::path cache;
  const Calibration c = local_calibration(local.tree, recalibrate, &cache);
  const MachineParams params = c.params();
  if (json) {
    std::cout << nlohmann::json{{"calibration", c.to_json()},
                                {"params", params.to_json()},
                                {"cache", cache.string()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  os << "cpu            " << c.cpu << " (probed CPUs " << format_cpu_list(c.cpus) << ")\n";
  os << "read bandwidth";
  for (size_t i = 0; i < c.read_gbs.size(); ++i)
    os << "  " << i + 1 << " core" << (i ? "s " : " ") << c.read_gbs[i] << " GB/s";
  os << "\nFP32 FMA peak  " << c.fma_f32_gflops << " GFLOP/s per core\n";
  os << "BF16 dot peak  "
     << (c.bf16_gflops > 0 ? std::to_string(c.bf16_gflops) + " GFLOP/s per core"
                           : "none (no AVX512_BF16)")
     << "\n";
  os << "GEMM 1 core    m=" << c.gemm_m_small << ": " << c.gemm_gflops_small
     << " GFLOP/s, m=" << c.gemm_m_large << ": " << c.gemm_gflops_large
     << " GFLOP/s (n = k = 1024)\n";
  os << "team region   ";
  for (size_t i = 0; i < c.team_region_us.size(); ++i)
    os << "  " << i + 1 << " thread" << (i ? "s " : " ") << c.team_region_us[i] << " us";
  os << "\nlatent groups ";
  if (c.latent_groups.empty())
    os << " no candidate (no parent of the cores holds enough of them to group)";
  for (const auto& g : c.latent_groups)
    os << "\n  group(" << g.cores << "," << g.stride << ")  packed " << format_cpu_list(g.packed)
       << ": " << g.packed_gbs << " GB/s, spread " << format_cpu_list(g.spread) << ": "
       << g.spread_gbs << " GB/s (ratio " << (g.spread_gbs > 0 ? g.packed_gbs / g.spread_gbs : 0)
       << ")";
  os << "\n  -> " << params.latent_group.describe();
  os << "\nprobe time     " << c.seconds << " s; cached in " << cache.string()
     << "\n\nsimulator parameters:\n"
     << params.to_json().dump(2) << "\n";
  std::cout << os.str();
  return 0;
}

const Subcommand kCalibrateCommand{
    "calibrate", "[--recalibrate] [--json]",
    "measure this machine (bandwidth, FMA/BF16 peaks, GEMM, team sync) for the simulator",
    cmd_calibrate};

// ---- sandwich-tune kernels: the GEMM schedules of a model on this machine -------------------

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

std::string clock_text(double s) {
  const int t = static_cast<int>(std::lround(std::max(0.0, s)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

int cmd_kernels(int argc, char** argv, int first) {
  engine::LoadOptions lo;
  std::string config_text, out;
  bool resume = false;
  GemmTunerOptions to;
  ProfilerOptions po;
  po.min_seconds = 0.002;
  ArgParser p("sandwich-tune kernels",
              "Tune the GEMM schedules of every GEMM of a model for every M from 1 to --max-m, "
              "measured on this machine's cores as the service configuration pins them.");
  engine::add_model_options(p, lo);
  p.add("--config", &config_text,
        "service configuration RxT or JSON (default: one rank of all CPUs); the first rank's "
        "CPUs run the measurements",
        "C");
  p.add("--max-m", &to.max_m, "largest M (tokens of a step) to tune (default 2048)");
  p.add("-o,--output", &out, "the schedule table to write (JSON)", "FILE");
  p.add_flag("--resume", &resume, "continue the interrupted tuning stored in -o FILE");
  p.add("--window", &to.window, "sigma: shapes that try every micro-kernel (default 16)");
  p.add("--reuse-threshold", &to.reuse_threshold,
        "relative spread of the winning slice that counts as stable (default 0.05)");
  p.add("--min-seconds", &po.min_seconds,
        "least time measured per schedule, after one warm-up call (default 0.002)");
  bool no_attention = false;
  p.add_flag("--no-attention", &no_attention,
             "tune only the GEMMs, not the attention kernels' block sizes");
  if (!p.parse(argc, argv, first)) return 0;
  if (out.empty()) throw CliError("kernels needs -o FILE (the schedule table to write)");
  if (lo.model.empty()) throw CliError("kernels needs --model M");
  if (to.max_m < 1) throw CliError("--max-m must be at least 1");
  if (to.window < 1) throw CliError("--window must be at least 1");
  if (!(to.reuse_threshold >= 0)) throw CliError("--reuse-threshold must be >= 0");
  if (!(po.min_seconds >= 0)) throw CliError("--min-seconds must be >= 0");

  const topotree::ServiceConfig config = config_text.empty()
                                             ? engine::single_rank_config(0)
                                             : topotree::parse_service_config(config_text);
  if (config_text.empty()) config_text = "1x" + std::to_string(config.threads_per_rank());
  const std::vector<int>& cpus = config.ranks.at(0).cpus;
  po.cpus = cpus;

  // The shape and every matrix's type only: dummy weights need not be made. A weights file is
  // loaded, so that a quantized one keys each GEMM by its matrix's own type (q4_k, q6_k, ...).
  engine::ModelConfig model;
  engine::MatrixTypes types;
  std::string storage, storage_name;
  if (lo.load_format == engine::LoadFormat::Dummy) {
    model = std::filesystem::exists(lo.model) ? engine::read_model_config(lo.model)
                                              : engine::load_preset(lo.model);
    storage = storage_name = lo.dtype == engine::WeightDType::F32 ? "f32" : "bf16";
    types = engine::uniform_matrix_types(model, storage);
  } else {
    lo.require_tokenizer = false;
    const auto m = engine::load_model(lo);
    model = m->config;
    types = engine::matrix_types(*m);
    storage = m->weight_storage;
    storage_name = m->weight_storage_name;
  }
  const std::vector<kernels::GemmKey> keys =
      model_gemms(model, config.rank_count(), config.threads_per_rank(), types);

  TableTuningSpec spec;
  spec.model = lo.model;
  spec.config = config_text;
  spec.dtype = storage;
  spec.max_m = to.max_m;
  spec.tuner = to;
  spec.profiler = po;
  for (const kernels::GemmKey& k : keys) spec.gemms.push_back({k, to.max_m, to.max_m, cpus});
  if (!no_attention) {
    const AttentionShape shape =
        attention_shape(model, config.rank_count(), config.threads_per_rank());
    const AttentionTuneOptions ao;
    spec.attention.push_back({true, shape, to.max_m, 0});
    spec.attention.push_back({false, shape, ao.max_decode_batch, ao.decode_context});
  }

  if (resume) check_resumable(spec, out);
  const bool tty = isatty(STDERR_FILENO);
  std::signal(SIGINT, on_sigint);
  const auto t0 = std::chrono::steady_clock::now();
  std::cerr << "tuning " << keys.size() << " GEMM shapes of " << model.name << " ("
            << (storage == storage_name ? storage + ", " : storage_name + ": " + storage + "; ")
            << config_text << ", CPUs " << format_cpu_list(cpus) << "), M = 1.." << to.max_m
            << "\n";
  auto last_line = t0 - std::chrono::hours(1);
  bool in_attention = false;
  auto progress = [&](const TableTuningProgress& pr) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    if (pr.attention) {
      if (!in_attention && tty) std::cerr << "\n";
      in_attention = true;
      os << "[attention] " << pr.what << "  M " << pr.m << "/" << pr.max_m << "  elapsed "
         << clock_text(elapsed);
    } else {
      const double remaining = elapsed * (1 - pr.fraction) / std::max(1e-9, pr.fraction);
      os << "[" << pr.index << "/" << pr.count << "] " << pr.what << "  M " << pr.m << "/"
         << pr.max_m << "  best " << pr.best_gflops << " GFLOPS  elapsed " << clock_text(elapsed)
         << "  remaining ~" << (pr.fraction > 0.01 ? clock_text(remaining) : std::string("?"));
    }
    if (tty) {
      std::cerr << "\r\033[K" << os.str() << std::flush;
    } else if (now - last_line > std::chrono::seconds(5) || pr.m == pr.max_m) {
      last_line = now;
      std::cerr << os.str() << "\n";
    }
  };
  const TableTuningResult result = tune_schedule_table(
      spec, out, resume, [] { return g_interrupted.load(); }, {}, progress);
  if (tty) std::cerr << "\n";
  if (result.status == TableTuningResult::Status::Interrupted) {
    std::cerr << "interrupted: wrote the table so far to " << out
              << "; rerun the same command with --resume to continue\n";
    return 130;
  }

  const TunerStats& st = result.stats;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  os << "wrote " << out << "\n";
  os << "groups            " << keys.size() << " (M = 1.." << to.max_m << " each)\n";
  os << "schedules profiled " << st.profiled << "; cache hits " << st.cache_hits << "\n";
  os << "saved             " << st.window_saved << " micro-kernel searches by the window, "
     << st.reuse_saved_m << " M by reuse, " << st.sparse_saved_m << " M by sparse search ("
     << st.searched_m << " M searched)\n";
  os << "confirmation      " << st.confirm_rejected
     << " winners gave way to the cost model's schedule when timed beside it\n";
  if (result.attention_kernels > 0)
    os << "attention         " << result.attention_kernels << " kernels, "
       << result.attention_stats.measured << " parameter sets timed, "
       << result.attention_stats.searched_m << " M searched, " << result.attention_stats.reused_m
       << " reused\n";
  os << "wall time         " << wall << " s\n";
  os << "tuned vs cost model (geometric mean at the measured M):\n";
  for (const GemmGroupResult& g : result.groups) {
    double log_sum = 0;
    int n = 0;
    for (const TunedPoint& pt : g.points)
      if (pt.seconds > 0 && pt.default_seconds > 0) {
        log_sum += std::log(pt.default_seconds / pt.seconds);
        ++n;
      }
    os << "  " << g.key.to_string() << ": " << (n ? std::exp(log_sum / n) : 1.0) << "x over " << n
       << " M\n";
  }
  std::cout << os.str();
  return 0;
}

const Subcommand kKernelsCommand{
    "kernels",
    "--model M [--config RxT] [--max-m 2048] -o FILE [--resume] [--window 16] "
    "[--reuse-threshold 0.05]",
    "tune the GEMM schedules of a model on this machine for every M (a schedule table)",
    cmd_kernels};

}  // namespace

int main(int argc, char** argv) {
  const Subcommand commands[] = {kTopologyCommand, kConfigsCommand,   kCompareCommand,
                                 kSurveyCommand,   kCalibrateCommand, kKernelsCommand,
                                 kPlanCommand};
  return run_subcommands(
      "sandwich-tune", commands, argc, argv,
      "T: nothing (this machine), a shipped name (see configs/topologies/), a descriptor .json,\n"
      "   an hwloc XML file (lstopo file.xml) or an hwloc synthetic string (\"pack:2 [numa] "
      "core:8 pu:2\")\n");
}
