#pragma once
// What a configuration search starts from: the machine (its TopoTree and speeds), the model's
// shapes and a request trace; shared by the tuner's commands.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/file_weights.h"
#include "engine/formats/model_config.h"
#include "tuner/latency_simulator.h"
#include "tuner/machine_description.h"
#include "tuner/machine_params.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {

struct SetupOptions {
  std::string topology;     // "" : this machine (see load_machine)
  std::string model;        // a preset name or a model's config.json / file
  std::string params_file;  // machine parameters (JSON); "" : the topology's, calibrated or generic
  std::string trace;        // "" or "sharegpt" (the shipped trace), "lmsys" (a model), or a CSV
  int trace_samples = 64;
  uint64_t seed = 0;
  bool recalibrate = false;
};

struct SearchSetup {
  MachineDescription machine;
  engine::ModelConfig model;
  MachineParams params;
  RequestTrace trace;
  std::vector<std::string> notes;  // things the user should know (fallbacks)
  std::optional<engine::FileWeights>
      weights;  // a GGUF file's matrices (quantized: under 1 byte each)

  // Bytes the simulator streams per matrix weight: the file's, else BF16's.
  double weight_bytes() const { return weights ? weights->bytes_per_weight : 2; }
  // A quantized file is measured on its own weights (dummy weights are BF16).
  bool quantized_file() const { return weights && weights->quantized; }
};

// A preset name or a config.json; `command` names the command in the "needs --model" error.
engine::ModelConfig load_model_shape(const std::string& model, const std::string& command);

MachineParams machine_params_for(const MachineDescription& m, const std::string& params_file,
                                 bool recalibrate, std::vector<std::string>& notes);

// `trace`: as SetupOptions::trace. The shipped ShareGPT trace missing (and not asked for by
// name) falls back to fixed 256/256 requests with a note; a missing file or an unknown name
// throws std::invalid_argument.
RequestTrace request_trace(const std::string& trace, int samples, uint64_t seed,
                           const engine::ModelConfig& model, std::vector<std::string>& notes);

// Throws std::invalid_argument (or what loading the parts throws) naming the bad input.
SearchSetup make_search_setup(const SetupOptions& o, const std::string& command);

// One line about the trace and the workload, for reports.
std::string trace_line(const SearchSetup& s, const WorkloadOptions& w);

}  // namespace sandwich::tuner
