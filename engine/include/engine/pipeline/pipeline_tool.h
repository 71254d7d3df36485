#pragma once
// --pipeline-parallel for the tools that run the engine (sandwich-generate, sandwich-bench
// engine, sandwich-perplexity), as sandwichd has it: under mpirun -np N, node 0 runs the tool
// with the pipeline's executors and prints what the tool prints; the other nodes load their
// layers and serve its steps, with one start-up line on stderr and no other output.
#include <memory>
#include <string>

#include "engine/formats/model.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plans/plan_check.h"
#include "engine/runtime/executor.h"

namespace sandwich::engine {

class PipelineTool {
 public:
  // Joins the MPI job (Pipeline::join); outside a pipeline (one stage, no mpirun) the rest does
  // nothing. Keep the object until the tool's executors are gone: its end ends the workers.
  PipelineTool(const PipelineOptions& options, std::string program);
  ~PipelineTool();

  bool worker() const { return pipe_ && !pipe_->head(); }
  // Makes load_model load this node's layers only.
  void choose_layers(LoadOptions& load) const;
  // A worker node: loads its layers, installs the plan's schedules, says so in one line on
  // stderr and serves the head's steps under the plan's configurations until the head ends the
  // job. Returns the tool's exit status.
  int serve(const LoadOptions& load, const ResolvedPlan& configs);
  // The head's executor factory for the tool's options (null outside a pipeline: make_executor).
  // Its first call describes the head (running `plan`'s configurations) and starts the workers,
  // then prints the nodes' lines to stderr.
  ExecutorFactory executor_factory(const Plan& plan);

 private:
  std::unique_ptr<Pipeline> pipe_;
  std::string program_;
};

}  // namespace sandwich::engine
