#include "tuner/search_report.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sandwich::tuner {
namespace {

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(ms < 10 ? 3 : (ms < 1000 ? 2 : 1)) << ms;
  return os.str();
}

nlohmann::json prediction_json(const Prediction& p) {
  if (!std::isfinite(p.ms)) return nullptr;
  return {{"ms", p.ms},
          {"compute_ms", p.compute_ms},
          {"memory_ms", p.memory_ms},
          {"communication_ms", p.communication_ms},
          {"sync_ms", p.sync_ms}};
}

}  // namespace

nlohmann::json stats_json(const SearchStats& s) {
  return {{"trees_explored", s.trees.explored()},
          {"trees_all_cores", s.trees.group_trees},
          {"trees_after_removes", s.trees.remove_trees},
          {"transforms_applied", s.trees.transforms},
          {"trees_deduplicated", s.trees.deduplicated},
          {"trees_pruned", s.trees.pruned},
          {"truncated", s.trees.truncated},
          {"configs_cut", s.configs_cut},
          {"configs_deduplicated", s.configs_deduplicated},
          {"configs_filtered", s.configs_filtered},
          {"configs_early_stopped", s.configs_early_stopped},
          {"configs_evaluated", s.configs_evaluated},
          {"groups", s.groups},
          {"groups_stopped", s.groups_stopped},
          {"seconds", s.seconds}};
}

std::string report_header(const ReportContext& c) {
  std::ostringstream os;
  const MachineDescription& m = *c.machine;
  os << "topology   " << m.name;
  if (!m.description.empty() && m.description != m.name) os << ": " << m.description;
  os << "\n           " << m.tree.leaf_count() << " PUs, " << m.tree.numa_count() << " NUMA node"
     << (m.tree.numa_count() == 1 ? "" : "s") << "; " << m.source << "\n";
  const engine::ModelConfig& model = *c.model;
  os << "model      " << model.name << ": " << model.n_layers << " layers, dim " << model.dim
     << ", " << model.n_heads << " query heads, " << model.n_kv_heads
     << " KV heads (rank counts must divide both)\n";
  os << "evaluator  " << c.evaluator << "; machine parameters: " << c.params_source << "\n";
  if (!c.contention.empty()) os << "contention latent " << c.contention << "\n";
  if (!c.trace.empty()) os << "trace      " << c.trace << "\n";
  for (const auto& n : m.notes) os << "note       " << n << "\n";
  for (const auto& n : c.notes) os << "note       " << n << "\n";
  return os.str();
}

std::string stats_line(const SearchStats& s) {
  std::ostringstream os;
  os << s.trees.explored() << " trees explored (" << s.trees.group_trees << " with all cores, "
     << s.trees.remove_trees << " after removes), " << s.trees.transforms << " transforms applied, "
     << s.trees.deduplicated << " deduplicated, " << s.trees.pruned << " pruned"
     << (s.trees.truncated ? " (tree limit reached)" : "") << "; configs: " << s.configs_cut
     << " cut, " << s.configs_deduplicated << " duplicates, " << s.configs_filtered << " filtered, "
     << s.configs_early_stopped << " early-stopped, " << s.configs_evaluated << " evaluated in "
     << s.groups << " groups (" << s.groups_stopped << " stopped early); " << std::fixed
     << std::setprecision(3) << s.seconds << " s";
  return os.str();
}

std::string report_text(const SearchResult& r, const ConfigNote& note) {
  std::ostringstream os;
  const bool prefill = r.phase == Phase::Prefill;
  os << "\n"
     << phase_name(r.phase) << ": top " << r.ranked.size() << " of " << r.stats.configs_evaluated
     << " configurations evaluated, by "
     << (prefill ? "mean prefill latency per request" : "time per output token") << "\n";
  size_t wp = 9;
  for (const auto& rc : r.ranked) wp = std::max(wp, rc.config.placement().size());
  os << "  #  ranks x threads  " << std::left << std::setw(static_cast<int>(wp)) << "placement"
     << "  prefill ms  decode ms/token  from\n";
  int i = 0;
  for (const auto& rc : r.ranked) {
    const double pf = prefill ? rc.prediction.ms : rc.other_phase.ms;
    const double dc = prefill ? rc.other_phase.ms : rc.prediction.ms;
    std::ostringstream shape;
    shape << rc.config.rank_count() << " x " << rc.config.threads_per_rank();
    os << std::right << std::setw(3) << ++i << "  " << std::left << std::setw(15) << shape.str()
       << "  " << std::setw(static_cast<int>(wp)) << rc.config.placement() << "  " << std::right
       << std::setw(10) << ms_text(pf) << "  " << std::setw(15) << ms_text(dc) << "  " << rc.origin
       << "\n";
    os << "     cpus " << rc.config.to_string(4).substr(rc.config.to_string(4).find(' ') + 1);
    if (note)
      if (const std::string n = note(rc.config); !n.empty()) os << "  (" << n << ")";
    os << "\n";
  }
  os << "search: " << stats_line(r.stats) << "\n";
  return os.str();
}

nlohmann::json report_json(const ReportContext& c, const std::vector<SearchResult>& results,
                           const nlohmann::json& params) {
  const MachineDescription& m = *c.machine;
  nlohmann::json out;
  out["topology"] = {{"name", m.name},
                     {"description", m.description},
                     {"source", m.source},
                     {"pus", m.tree.leaf_count()},
                     {"numa_nodes", m.tree.numa_count()},
                     {"notes", m.notes}};
  out["model"] = {
      {"name", c.model->name}, {"n_heads", c.model->n_heads}, {"n_kv_heads", c.model->n_kv_heads}};
  out["evaluator"] = c.evaluator;
  out["machine_params"] = params;
  out["trace"] = c.trace;
  out["notes"] = c.notes;
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& r : results) {
    nlohmann::json list = nlohmann::json::array();
    int i = 0;
    for (const auto& rc : r.ranked) {
      const bool prefill = r.phase == Phase::Prefill;
      list.push_back({{"rank", ++i},
                      {"ranks", rc.config.rank_count()},
                      {"threads_per_rank", rc.config.threads_per_rank()},
                      {"placement", rc.config.placement()},
                      {"predicted_ms", rc.prediction.ms},
                      {"prefill", prediction_json(prefill ? rc.prediction : rc.other_phase)},
                      {"decode", prediction_json(prefill ? rc.other_phase : rc.prediction)},
                      {"origin", rc.origin},
                      {"config", rc.config.to_json()}});
    }
    phases[phase_name(r.phase)] = {{"configs", list}, {"stats", stats_json(r.stats)}};
  }
  out["phases"] = phases;
  return out;
}

}  // namespace sandwich::tuner
