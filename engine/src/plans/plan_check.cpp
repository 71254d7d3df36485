#include "engine/plans/plan_check.h"

#include <ostream>
#include <stdexcept>

#include "engine/plans/checked_schedule_table.h"

namespace sandwich::engine {
namespace {

// The first problem of several, with a count of the rest: a refusal stays one line.
std::string first_of(const std::vector<std::string>& problems) {
  std::string s = problems.front();
  if (problems.size() > 1) s += " (and " + std::to_string(problems.size() - 1) + " more)";
  return s;
}

}  // namespace

AppliedPlan apply_plan(const ResolvedPlan& r, const Model& model, const std::string& weights_file,
                       const std::string& program, std::ostream& log) {
  const Plan& p = r.plan;
  const bool warn = r.mismatch == PlanMismatch::Warn;
  const std::string name = p.file.string();
  const auto warning = [&](const std::string& what) {
    log << program << ": warning: " << what << "\n" << std::flush;
  };
  for (const auto& w : r.warnings) warning(w);

  if (p.model) {
    const ModelIdentity here =
        model_identity(model.config, std::string(weight_dtype_name(model.weight_dtype())),
                       weights_file, model.weight_storage, model.weight_storage_name);
    const std::string differs = here.mismatch(*p.model);
    if (!differs.empty()) {
      const std::string what = name + " was made for another model (" + differs + ")";
      if (!warn)
        throw std::invalid_argument(what +
                                    "; make one for this model with sandwich-tune plan, or run "
                                    "it anyway with --plan-mismatch warn");
      warning(what + "; its configurations are used anyway");
    } else if (const std::string d = here.file_difference(*p.model); !d.empty()) {
      warning(name + ": " + d);
    }
  }
  bool machine_fits = true;
  if (p.machine) {
    const std::string differs = this_machine_fingerprint().mismatch(*p.machine, "the plan's");
    if (!differs.empty()) {
      const std::string what =
          name + " was made on another machine or kernel build (" + differs + ")";
      if (!warn)
        throw std::invalid_argument(what +
                                    "; make one on this machine with sandwich-tune plan, or run "
                                    "its configurations with --plan-mismatch warn");
      warning(what + "; its configurations are used, with the cost model's schedules");
      machine_fits = false;
    }
  }

  // A table the plan names: strictly, all of it or (error mode) nothing.
  std::optional<CheckedScheduleTable> table;
  std::string origin;
  if (r.table_from_plan && machine_fits) {
    if (p.inline_schedules) {
      origin = name + ": schedules";
      table.emplace(*p.inline_schedules, origin);
    } else {
      origin = p.schedules->string();
      std::optional<ScheduleTable> read;
      try {
        read = read_schedule_table(*p.schedules);
      } catch (const std::invalid_argument& e) {
        if (!warn) throw std::invalid_argument(name + ": its kernel table: " + e.what());
        warning(name + ": its kernel table: " + e.what() + "; the cost model's schedules are used");
      }
      if (read) table.emplace(*read, origin);
    }
    if (table && !warn && !table->problems().empty())
      throw std::invalid_argument(
          name + ": its kernel table does not validate: " + first_of(table->problems()));
  }

  AppliedPlan a;
  std::string& schedules = a.schedules;
  schedules = "cost-model schedules";
  if (table) {
    a.schedule_ranges = table->install(log);
    a.table = origin;
    schedules = (p.inline_schedules ? "schedules inline in " + name : "schedules " + origin) +
                " (" + std::to_string(a.schedule_ranges) + " GEMM ranges)";
  } else if (!r.table_from_plan && p.schedules) {
    a.schedule_ranges = install_schedule_table(*p.schedules, log);
    a.table = p.schedules->string();
    schedules =
        "schedules " + *a.table + " (" + std::to_string(a.schedule_ranges) + " GEMM ranges)";
  }
  a.line = (name.empty() ? std::string("no plan") : "plan " + name) + ": prefill " +
           p.prefill.to_string() + ", decode " + p.decode.to_string() +
           (r.same_config ? " (--same-config)" : "") +
           (r.chosen_by.empty() ? "" : " " + r.chosen_by) + "; " + schedules;
  return a;
}

}  // namespace sandwich::engine
