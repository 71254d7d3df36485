#pragma once
// What `sandwich-tune plan` is asked for: its options as parsed, before they are checked.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/model.h"

namespace sandwich::tuner {

struct PlanRequest {
  engine::LoadOptions load;
  std::string trace, slo, out, budget_text = "30m", params_file, topology;
  std::string hostfile;  // nodes of a pipeline, alike to this machine (link measured over MPI)
  int trace_samples = 64, top_k = 4, prefill_chunk = 512, decode_batch = 16, max_num_seqs = 64;
  int64_t max_m = 0;  // 0: no cap
  double min_seconds = 0.002, slo_scale = 1;
  uint64_t seed = 0;
  bool resume = false, dry_run = false, no_attention = false, quiet = false;
  // Without --decode-batch a single-sequence SLO measures decode at batch 1: that is the only
  // batch such a server runs (and where memory-bound placements differ).
  bool decode_batch_given = false;
  std::string command_line;  // recorded in the plan
};

// The options a resumed run must share with the interrupted one (the budget may change).
nlohmann::json resume_options_json(const PlanRequest& r);

}  // namespace sandwich::tuner
