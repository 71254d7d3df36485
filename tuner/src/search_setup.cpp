#include "tuner/search_setup.h"

#include <filesystem>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "common/lmsys_lengths.h"
#include "common/paths.h"
#include "engine/formats/file_weights.h"
#include "engine/formats/model.h"
#include "tuner/calibration.h"

namespace sandwich::tuner {

engine::ModelConfig load_model_shape(const std::string& m, const std::string& command) {
  if (m.empty())
    throw std::invalid_argument(
        command + " needs --model (a preset name such as llama3-8b, or a config.json)");
  if (std::filesystem::exists(m)) return engine::read_model_config(m);
  return engine::load_preset(m);
}

MachineParams machine_params_for(const MachineDescription& m, const std::string& params_file,
                                 bool recalibrate, std::vector<std::string>& notes) {
  if (!params_file.empty()) {
    const nlohmann::json j = read_json_file(params_file, file_kinds::kMachineParameters);
    MachineParams p = MachineParams::from_json(j.contains("params") ? j["params"] : j, params_file);
    if (p.source == "generic defaults") p.source = params_file;
    return p;
  }
  if (m.params) return *m.params;
  if (m.local) {
    std::filesystem::path cache;
    const Calibration c = local_calibration(m.tree, recalibrate, &cache);
    MachineParams p = c.params();
    p.source += ", cached in " + cache.string();
    return p;
  }
  notes.push_back(
      "no speeds are known for this topology: the simulator uses generic defaults (give --params "
      "FILE)");
  return MachineParams{};
}

RequestTrace request_trace(const std::string& trace, int samples, uint64_t seed,
                           const engine::ModelConfig& model, std::vector<std::string>& notes) {
  if (samples < 1) throw std::invalid_argument("--trace-samples must be at least 1");
  if (trace == "lmsys") {
    RequestTrace t;
    t.requests = lmsys_lengths(samples, seed, model.max_seq_len);
    t.source = std::to_string(samples) + " requests of the LMSYS length model (seed " +
               std::to_string(seed) + ")";
    return t;
  }
  const bool named = trace == "sharegpt";
  const std::filesystem::path table =
      trace.empty() || named ? default_length_trace() : std::filesystem::path(trace);
  if (!std::filesystem::exists(table)) {
    if (!trace.empty())
      throw std::invalid_argument(
          named ? "the ShareGPT trace is not at " + table.string() + " (set SANDWICH_SHARED)"
                : "unknown trace '" + trace + "': not a file, nor sharegpt or lmsys");
    notes.push_back(
        "no request trace at " + table.string() +
        " (set SANDWICH_SHARED or --trace): using requests of 256 input and 256 output tokens");
    RequestTrace t;
    t.requests.assign(static_cast<size_t>(samples),
                      {std::min(256, model.max_seq_len / 2), std::min(256, model.max_seq_len / 2)});
    t.source = std::to_string(samples) + " fixed requests";
    return t;
  }
  return sample_trace(read_length_trace(table), samples, seed, model.max_seq_len,
                      table.filename().string());
}

SearchSetup make_search_setup(const SetupOptions& o, const std::string& command) {
  SearchSetup s{load_machine(o.topology), load_model_shape(o.model, command), {}, {}, {}, {}};
  if (!o.model.empty()) s.weights = engine::file_weights(o.model);
  s.params = machine_params_for(s.machine, o.params_file, o.recalibrate, s.notes);
  s.trace = request_trace(o.trace, o.trace_samples, o.seed, s.model, s.notes);
  return s;
}

std::string trace_line(const SearchSetup& s, const WorkloadOptions& w) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << s.trace.source << ": mean input "
     << s.trace.mean_input() << ", output " << s.trace.mean_output() << " tokens; prefill chunk "
     << w.prefill_chunk << ", decode batch " << w.decode_batch << " at mean context "
     << s.trace.mean_decode_context();
  if (s.weights)
    os << std::defaultfloat << std::setprecision(3) << "; weights "
       << (s.weights->quantized ? "quantized, " : "") << s.weights->bytes_per_weight
       << " bytes each";
  return os.str();
}

}  // namespace sandwich::tuner
