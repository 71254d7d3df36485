#pragma once
// Running a plan as it says: after the model has loaded, the plan is checked against the model
// and this machine, its kernel table is validated and installed, and one line says what runs.
// The one place where sandwichd, sandwich-generate and sandwich-bench engine do this.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "engine/formats/model.h"
#include "engine/plans/plan.h"

namespace sandwich::engine {

// --plan-mismatch: a plan made for another model or machine, or one whose kernel table or
// configurations do not fit, is refused (error) or used where it still fits (warn).
enum class PlanMismatch { Error, Warn };
inline constexpr EnumName<PlanMismatch> kPlanMismatchNames[] = {{PlanMismatch::Error, "error"},
                                                                {PlanMismatch::Warn, "warn"}};

// What the plan options ask for (tool_options.h's resolve_plan), before the model loads.
struct ResolvedPlan {
  // The configurations and the table to run, over what the plan file says (its model, machine
  // and file; version 0 and no file without one).
  Plan plan;
  PlanMismatch mismatch = PlanMismatch::Error;
  // Nothing chose the phase (no option, no plan, or the plan's did not parse here in warn
  // mode): it holds one rank of --threads cores, which a tool may replace (sandwichd's search).
  bool prefill_default = false, decode_default = false;
  // The table came through the plan file: checked strictly. (--schedules FILE alone only warns
  // about what it skips, as the cost model's schedules run in its place.)
  bool table_from_plan = false;
  // --same-config: decode runs prefill's configuration; a tool that replaces the defaults keeps
  // them equal.
  bool same_config = false;
  std::vector<std::string> warnings;  // what of the plan does not fit here (warn mode)
  std::string chosen_by;              // how a tool chose default configurations, for the log
};

// What apply_plan ran with.
struct AppliedPlan {
  std::optional<std::string> table;  // the table's file, or "PLAN: schedules" for an inline one
  size_t schedule_ranges = 0;        // GEMM ranges installed
  // "schedules FILE (40 GEMM ranges)", "schedules inline in FILE (...)" or "cost-model schedules"
  std::string schedules;
  // "plan p.json: prefill 1x2, decode 2x1; schedules p.schedules.json (40 GEMM ranges)", or
  // "no plan: ...; cost-model schedules": the start-up log line (without the program's name).
  std::string line;
};

// Call after the model has loaded and before any executor is made (rank processes inherit the
// installed table). Checks a plan made by sandwich-tune (version 1) against the model
// (`weights_file`: the --model value) and this machine, validates the table a plan names (path or
// inline) and installs the table. A plan refused in error mode throws std::invalid_argument: one
// line naming the plan file and what differs. Warnings go to `log` as "<program>: warning: ...".
// A hand-written plan (version 0) is checked for its table only; --schedules FILE alone is
// installed as install_schedule_table does, with warnings for what it skips.
AppliedPlan apply_plan(const ResolvedPlan& r, const Model& model, const std::string& weights_file,
                       const std::string& program, std::ostream& log);

}  // namespace sandwich::engine
