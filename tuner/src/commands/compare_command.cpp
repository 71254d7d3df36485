#include "tuner/commands/compare_command.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "tuner/config_search.h"
#include "tuner/kendall_tau.h"
#include "tuner/measured_evaluator.h"
#include "tuner/search_report.h"

namespace sandwich::tuner {
namespace {

// One phase: its lines added to `os`, its figures returned as JSON.
nlohmann::json compare_phase(Phase ph, const SearchSetup& s, LatencySimulator& sim,
                             MeasuredEvaluator& measured, int top_k, std::ostream& os) {
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
    const topotree::ServiceConfig& c = r.ranked[i].config;
    std::ostringstream shape;
    shape << c.rank_count() << " x " << c.threads_per_rank() << " "
          << c.to_string(2).substr(c.to_string(2).find(' ') + 1);
    os << "  " << std::left << std::setw(16) << shape.str() << std::right << std::fixed
       << std::setprecision(2) << std::setw(11) << simulated[i] << std::setw(6) << i + 1
       << std::setw(11) << real[i] << std::setw(6) << real_rank << "\n";
    rows.push_back({{"config", c.to_string(8)},
                    {"simulated_ms", simulated[i]},
                    {"measured_ms", real[i]},
                    {"simulated_rank", i + 1},
                    {"measured_rank", real_rank}});
  }
  const double tau = kendall_tau(simulated, real);
  os << "  agreement: Kendall tau " << std::setprecision(2) << tau << ", best configuration "
     << (by_real.front() == 0 ? "the same" : "differs") << "\n";
  return {{"phase", phase_name(ph)},
          {"configs", rows},
          {"kendall_tau", tau},
          {"same_best", by_real.front() == 0}};
}

}  // namespace

std::string compare_report(const CompareRequest& r) {
  if (!r.common.setup.topology.empty())
    throw CliError("compare measures this machine; drop --topology");
  const std::vector<Phase> phases = phases_named(r.phase);
  if (r.top_k < 1) throw CliError("--top-k must be at least 1");
  SearchSetup s = command_search_setup(r.common, "compare");
  const WorkloadOptions w = command_workload(r.common, s);
  LatencySimulator sim(s.machine.tree, s.params, s.model, s.trace, w);
  MeasureOptions mo;
  mo.real_weights = s.quantized_file();
  MeasuredEvaluator measured(r.common.setup.model, s.trace, w, mo);
  ReportContext ctx{&s.machine,      &s.model,         "latency simulator vs " + measured.name(),
                    s.params.source, trace_line(s, w), s.notes};
  ctx.contention = sim.latent_group_summary();
  nlohmann::json out = nlohmann::json::array();
  std::ostringstream os;
  os << report_header(ctx);
  for (Phase ph : phases) out.push_back(compare_phase(ph, s, sim, measured, r.top_k, os));
  if (r.json)
    return nlohmann::json{{"params", s.params.to_json()}, {"trace", ctx.trace}, {"phases", out}}
               .dump(2) +
           "\n";
  return os.str();
}

}  // namespace sandwich::tuner
