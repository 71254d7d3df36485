#pragma once
// `sandwich-tune plan`: from a model and this machine to a plan file in five stages (search,
// measure, choose, kernels, write), each resumable after Ctrl-C. The stages one by one are in
// tuner/planner/plan_stages.h.
#include <string>

#include "tuner/planner/plan_request.h"

namespace sandwich::tuner {

// "sandwich-tune plan ...": the command's words from argv[first - 1], shell-quoted where needed,
// as the plan records it.
std::string quoted_command_line(int argc, char** argv, int first);

// Runs every stage not yet done and prints the plan's summary (or, with dry_run, the
// candidates). Returns 0, or 130 when Ctrl-C stopped it with the finished stages saved beside
// the plan. Bad options throw CliError; bad input throws before any stage starts.
int run_plan(const PlanRequest& request);

}  // namespace sandwich::tuner
