#include "engine/pipeline/pipeline_tool.h"

#include <cstdio>
#include <memory>
#include <sstream>
#include <utility>

namespace sandwich::engine {

PipelineTool::PipelineTool(const PipelineOptions& options, std::string program)
    : pipe_(Pipeline::join(options)), program_(std::move(program)) {}

PipelineTool::~PipelineTool() = default;

void PipelineTool::choose_layers(LoadOptions& load) const {
  if (!pipe_) return;
  const Pipeline* pipe = pipe_.get();
  load.choose_layers = [pipe](const ModelConfig& c) { return pipe->layers(c); };
}

int PipelineTool::serve(const LoadOptions& load, const ResolvedPlan& configs) {
  LoadOptions mine = load;
  choose_layers(mine);
  const auto model = load_model(mine);
  // Before the executors: rank processes inherit the installed table. Its warnings go to the
  // head's log only, which checks the same plan.
  std::ostringstream quiet;
  const AppliedPlan applied = apply_plan(configs, *model, load.model, program_, quiet);
  std::fprintf(stderr, "%s: %s: %s\n", program_.c_str(), pipe_->node_name(pipe_->node()).c_str(),
               applied.line.c_str());
  return pipe_->serve(*model, {configs.plan.prefill, configs.plan.decode});
}

ExecutorFactory PipelineTool::executor_factory(const Plan& plan) {
  if (!pipe_) return nullptr;
  ExecutorFactory make = pipe_->executor_factory();
  Pipeline* pipe = pipe_.get();
  const std::string program = program_;
  auto started = std::make_shared<bool>(false);
  return [=](const Model& model, KVCache& kv, const topotree::ServiceConfig& config,
             const ExecutorLimits& limits) {
    if (*started) return make(model, kv, config, limits);
    pipe->set_head_options(model, {plan.prefill, plan.decode});
    auto executor = make(model, kv, config, limits);
    *started = true;
    for (const std::string& line : pipe->node_lines())
      std::fprintf(stderr, "%s: pipeline %s\n", program.c_str(), line.c_str());
    return executor;
  };
}

}  // namespace sandwich::engine
