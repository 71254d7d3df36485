#include "tuner/planner.h"

#include <iostream>

#include "planner/pair_choice.h"
#include "tuner/ctrl_c.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {

std::string quoted_command_line(int argc, char** argv, int first) {
  std::string command_line = "sandwich-tune";
  for (int i = first - 1; i < argc; ++i) {
    command_line += ' ';
    command_line += shell_quote(argv[i]);
  }
  return command_line;
}

int run_plan(const PlanRequest& request) {
  PlanSetup setup = prepare_plan(request);
  PlanRun run(std::move(setup), stop_on_ctrl_c());
  try {
    plan_search(run);
    if (request.dry_run) {
      std::cout << dry_run_report(run);
      return 0;
    }
    plan_measure(run);
    plan_kernels(run);
    plan_remeasure(run);
    plan_choose(run);
    const engine::Plan plan = plan_write(run);
    std::cout << plan_summary(run, plan);
    if (run.machine.cluster) std::cout << pipeline_report(run);
    return 0;
  } catch (const PlanInterrupted&) {
    run.save();
    run.progress.note("interrupted: the finished stages are saved in " + run.state_file.string() +
                      "; rerun the same command with --resume to continue");
    return 130;
  }
}

}  // namespace sandwich::tuner
