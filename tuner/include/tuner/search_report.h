#pragma once
// How `sandwich-tune configs` shows a search: text for people, JSON for scripts and plans.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tuner/config_search.h"
#include "tuner/machine_description.h"

namespace sandwich::tuner {

struct ReportContext {
  const MachineDescription* machine = nullptr;
  const engine::ModelConfig* model = nullptr;
  std::string evaluator;      // "latency simulator"
  std::string params_source;  // where the machine parameters come from
  std::string trace;          // one line about the trace and workload
  std::vector<std::string> notes;
  std::string contention;  // the simulator's latent group term, if any (one line)
};

// Something to say about one configuration, shown after its CPUs ("" : nothing).
using ConfigNote = std::function<std::string(const topotree::ServiceConfig&)>;

std::string report_header(const ReportContext& ctx);
std::string report_text(const SearchResult& r, const ConfigNote& note = {});
// One line: "40 trees explored (...), ...; 0.05 s".
std::string stats_line(const SearchStats& s);
// The search's statistics as a flat JSON object ("trees_explored", ..., "seconds").
nlohmann::json stats_json(const SearchStats& s);
nlohmann::json report_json(const ReportContext& ctx, const std::vector<SearchResult>& results,
                           const nlohmann::json& params);

}  // namespace sandwich::tuner
