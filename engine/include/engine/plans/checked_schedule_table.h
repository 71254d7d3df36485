#pragma once
// A tuned-schedule table checked against this machine and the kernels, once: its machine
// compared, its schedules parsed and validated into the kernels' own objects, every entry that
// would be skipped noted. A plan's strict check reads the problems and the install runs what was
// checked, so neither repeats the other. Installing makes it the process's tuned schedules
// (kernels/tuned_schedules.h) and tunable-kernel parameters (kernels/kernel_tunables.h).
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "engine/plans/schedule_table.h"

namespace sandwich::engine {

class CheckedScheduleTable {
 public:
  // `origin` names the table in problems and warnings (a file, or "plan.json: schedules").
  CheckedScheduleTable(const ScheduleTable& table, std::string origin);
  ~CheckedScheduleTable();
  CheckedScheduleTable(CheckedScheduleTable&&) noexcept;
  CheckedScheduleTable& operator=(CheckedScheduleTable&&) noexcept;

  // What install() would skip, one line each naming the origin: another machine or kernel build,
  // a schedule that does not parse or validate for its key, an M range that is empty or overlaps
  // another. Empty: every entry would be installed.
  const std::vector<std::string>& problems() const;
  // Installs what is valid, replacing whatever was installed before: another machine's table
  // installs nothing. Never throws: each thing skipped is one warning line on `warn`, and the
  // cost model (or the kernel's defaults) runs in its place. GEMMs the table lacks warn once
  // each per process, on stderr, when first run (from a rank's own process). Returns the number
  // of GEMM ranges installed.
  size_t install(std::ostream& warn) const;

 private:
  struct Impl;  // the kernels' objects, which the engine's public headers do not show
  std::unique_ptr<Impl> impl_;
};

// CheckedScheduleTable(table, origin).problems().
std::vector<std::string> schedule_table_problems(const ScheduleTable& table,
                                                 const std::string& origin);

// Reads `file` and installs it as CheckedScheduleTable::install does; a missing or corrupt file
// is one warning line, and leaves nothing installed.
size_t install_schedule_table(const std::filesystem::path& file, std::ostream& warn);
// The same for a table already read (a plan's inline table); `origin` names it in warnings.
size_t install_schedule_table(const ScheduleTable& table, const std::string& origin,
                              std::ostream& warn);

}  // namespace sandwich::engine
