#include "tuner/commands/survey_command.h"

#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "tuner/config_search.h"
#include "tuner/search_report.h"
#include "tuner/search_setup.h"

namespace sandwich::tuner {
namespace {

void header_line(std::ostream& os) {
  os << std::left << std::setw(26) << "topology" << std::right << std::setw(5) << "PUs"
     << std::setw(6) << "NUMA" << std::setw(9) << "phase" << std::setw(10) << "hash" << std::setw(8)
     << "trees" << std::setw(8) << "(all)" << std::setw(8) << "(rem)" << std::setw(8) << "xforms"
     << std::setw(8) << "dedup" << std::setw(8) << "pruned" << std::setw(8) << "cut" << std::setw(8)
     << "dup" << std::setw(8) << "filt" << std::setw(8) << "early" << std::setw(8) << "eval"
     << std::setw(10) << "search ms"
     << "  best\n";
}

void row_line(std::ostream& os, const std::string& name, const MachineDescription& m, Phase ph,
              const std::string& hash, const SearchResult& r) {
  const SearchStats& st = r.stats;
  const auto& best = r.ranked.front();
  std::ostringstream b;
  b << best.config.rank_count() << "x" << best.config.threads_per_rank() << " " << std::fixed
    << std::setprecision(2) << best.prediction.ms << " ms";
  os << std::left << std::setw(26) << name << std::right << std::setw(5) << m.tree.leaf_count()
     << std::setw(6) << m.tree.numa_count() << std::setw(9) << phase_name(ph) << std::setw(10)
     << hash << std::setw(8) << st.trees.explored() << std::setw(8) << st.trees.group_trees
     << std::setw(8) << st.trees.remove_trees << std::setw(8) << st.trees.transforms << std::setw(8)
     << st.trees.deduplicated << std::setw(8) << st.trees.pruned << std::setw(8) << st.configs_cut
     << std::setw(8) << st.configs_deduplicated << std::setw(8) << st.configs_filtered
     << std::setw(8) << st.configs_early_stopped << std::setw(8) << st.configs_evaluated
     << std::setw(10) << std::fixed << std::setprecision(1) << st.seconds * 1000 << "  " << b.str()
     << "\n";
}

}  // namespace

std::string survey_report(const SurveyRequest& r) {
  std::vector<std::pair<std::string, topotree::HashMode>> hashes;
  if (r.hash == "structure" || r.hash == "both")
    hashes.emplace_back("structure", topotree::HashMode::Structure);
  if (r.hash == "placement" || r.hash == "both")
    hashes.emplace_back("placement", topotree::HashMode::Placement);
  if (hashes.empty())
    throw std::invalid_argument("--hash must be structure, placement or both, got '" + r.hash +
                                "'");
  const engine::ModelConfig model = load_model_shape(r.model, "survey");
  std::vector<std::string> notes;
  const SetupOptions defaults{};
  const RequestTrace trace = request_trace("", defaults.trace_samples, defaults.seed, model, notes);
  nlohmann::json all = nlohmann::json::array();
  std::ostringstream os;
  os << "model " << model.name << ", " << trace.source << ", decode batch " << r.decode_batch
     << "\n";
  header_line(os);
  for (const auto& name : shipped_topology_names()) {
    const MachineDescription m = load_machine(name);
    if (m.cluster) continue;  // its node is surveyed under its own name
    WorkloadOptions w;
    w.decode_batch = r.decode_batch;
    LatencySimulator sim(m.tree, m.params.value_or(MachineParams{}), model, trace, w);
    for (Phase ph : {Phase::Prefill, Phase::Decode}) {
      for (const auto& [hash_name, hash] : hashes) {
        SearchOptions so;
        so.phase = ph;
        so.patience = r.patience;
        so.hash = hash;
        const SearchResult res = search_configs(m.tree, model, sim, so);
        row_line(os, name, m, ph, hash_name, res);
        const auto& best = res.ranked.front();
        nlohmann::json row = {{"topology", name},
                              {"phase", phase_name(ph)},
                              {"hash", hash_name},
                              {"pus", m.tree.leaf_count()},
                              {"best", best.config.to_string(2)},
                              {"best_ms", best.prediction.ms}};
        row.update(stats_json(res.stats));
        all.push_back(row);
      }
    }
  }
  if (r.json) return all.dump(2) + "\n";
  for (const auto& n : notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace sandwich::tuner
