#pragma once
// Choosing how many nodes of a cluster one pipeline spans (P = 1..N), each with the search's
// best prefill and decode configurations; the N / P pipelines that fit serve side by side.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/pipeline_estimate.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {

struct PipelineChoice {
  std::vector<PipelineEstimate> by_stages;  // [P - 1]
  int chosen = 0;                           // P; 0 when no P fits
  int batch = 1;                            // the decode batch the choice compares
  std::string why;

  int pipelines(int stages) const;  // pipelines of `stages` nodes the cluster holds
  double cluster_tokens_per_s(const PipelineEstimate& e) const;  // at `batch`, all pipelines
  int nodes = 1;
};

// The highest decode rate of the whole cluster at the run's decode batch (pipelines x each
// one's tokens/s) among the P that fit; within 2% the shorter step at batch 1.
PipelineChoice choose_pipeline(const PlanRun& run);

// The choice and every depth's figures, as the plan's details record them.
nlohmann::json pipeline_json(const PipelineChoice& c, const Cluster& cluster);

// The layer split of the chosen depth as sandwichd's --layer-split takes it ("41,39"); "" when
// no P fits.
std::string layer_split_option(const PipelineChoice& c);

}  // namespace sandwich::tuner
