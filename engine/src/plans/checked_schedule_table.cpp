// Checking a tuned-schedule table once, and installing what passed with one warning per thing
// skipped.
#include "engine/plans/checked_schedule_table.h"

#include <iostream>
#include <stdexcept>

#include "kernels/kernel_tunables.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::engine {
namespace fs = std::filesystem;

namespace {

constexpr const char* kWarn = "sandwich: schedules: ";

void warn_line(std::ostream& warn, const std::string& what) {
  warn << kWarn << what << "\n" << std::flush;
}

// Leaves the cost model everywhere: a table that fails replaces whatever was installed before.
size_t install_nothing(std::ostream& warn, const std::string& why) {
  kernels::install_tuned_schedules(nullptr);
  kernels::clear_kernel_params();
  warn_line(warn, why + "; the cost model's schedules are used");
  return 0;
}

// From a GEMM's thread: one line, written at once, so that ranks' lines do not interleave.
void report_miss(const kernels::GemmKey& key) {
  const kernels::TunedSchedules* t = kernels::installed_tuned_schedules();
  const std::string line =
      std::string(kWarn) + (t && t->has_key(key)
                                ? "the table's ranges of M for " + key.to_string() +
                                      " do not cover every M; the cost model's schedule is used "
                                      "outside them\n"
                                : "the table has no entry for " + key.to_string() +
                                      "; the cost model's schedule is used\n");
  std::cerr << line << std::flush;
}

// The kernels' key of a table entry (its type was checked when the table was read).
kernels::GemmKey key_of(const TunedGemm& g) {
  kernels::GemmKey key{g.n, g.k, kernels::DType::BF16, g.threads, g.pair};
  if (!kernels::set_weight_type(key, g.dtype))
    throw std::invalid_argument("unknown weight type \"" + g.dtype + "\"");
  return key;
}

std::string m_range_text(int64_t m_lo, int64_t m_hi) {
  return "M " + std::to_string(m_lo) + ".." + std::to_string(m_hi);
}

}  // namespace

struct CheckedScheduleTable::Impl {
  std::string origin;
  // "ORIGIN was tuned on another machine ... (what differs)", or "" for this machine's table.
  std::string other_machine;
  std::string failure;  // what stopped the check, should anything unforeseen throw
  std::shared_ptr<kernels::TunedSchedules> gemms = std::make_shared<kernels::TunedSchedules>();
  kernels::KernelParamTable params;
  std::vector<std::string> problems;
  std::vector<std::string> warnings;  // install()'s lines for the entries skipped, in order

  void check_gemms(const ScheduleTable& t) {
    const auto skip = [&](const std::string& what) {
      problems.push_back(origin + ": " + what);
      warnings.push_back(origin + ": " + what + "; the cost model's schedule is used");
    };
    for (const TunedGemm& g : t.gemms) {
      kernels::GemmKey key;
      try {
        key = key_of(g);
      } catch (const std::invalid_argument& e) {
        skip("tuned schedules for N=" + std::to_string(g.n) + " K=" + std::to_string(g.k) + ": " +
             e.what());
        continue;
      }
      for (const TunedGemmRange& r : g.ranges) {
        try {
          gemms->add(key, r.m_lo, r.m_hi, r.schedule);
        } catch (const std::invalid_argument& e) {
          skip(e.what());
        }
      }
    }
  }

  void check_tunables(const ScheduleTable& t) {
    for (const TunedKernel& u : t.tunables)
      for (const TunedKernelRange& r : u.ranges) {
        const std::string why = params.add(u.kernel, u.key, r.m_lo, r.m_hi, r.params);
        if (why.empty()) continue;
        problems.push_back(origin + ": tuned parameters of " + u.kernel + " " +
                           m_range_text(r.m_lo, r.m_hi) + ": " + why);
        warnings.push_back(origin + ": " +
                           kernels::kernel_params_text(u.kernel, u.key, r.m_lo, r.m_hi) + ": " +
                           why + "; the kernel's defaults are used");
      }
  }
};

CheckedScheduleTable::CheckedScheduleTable(const ScheduleTable& table, std::string origin)
    : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.origin = std::move(origin);
  try {
    if (const std::string d = this_machine_fingerprint().mismatch(table.machine); !d.empty()) {
      c.other_machine = c.origin + " was tuned on another machine or kernel build (" + d + ")";
      c.problems.push_back(c.other_machine);
    }
    c.check_gemms(table);
    c.check_tunables(table);
  } catch (const std::exception& e) {
    c.failure = e.what();
    c.problems.push_back(c.origin + ": " + c.failure);
  }
}

CheckedScheduleTable::~CheckedScheduleTable() = default;
CheckedScheduleTable::CheckedScheduleTable(CheckedScheduleTable&&) noexcept = default;
CheckedScheduleTable& CheckedScheduleTable::operator=(CheckedScheduleTable&&) noexcept = default;

const std::vector<std::string>& CheckedScheduleTable::problems() const {
  return impl_->problems;
}

size_t CheckedScheduleTable::install(std::ostream& warn) const {
  const Impl& c = *impl_;
  if (!c.other_machine.empty()) return install_nothing(warn, c.other_machine);
  if (!c.failure.empty()) return install_nothing(warn, c.origin + ": " + c.failure);
  try {
    for (const std::string& w : c.warnings) warn_line(warn, w);
    kernels::install_kernel_params(c.params);
    kernels::install_tuned_schedules(c.gemms, report_miss);
    return c.gemms->ranges();
  } catch (const std::exception& e) {
    // Nothing above should throw; never let a table stop a server.
    return install_nothing(warn, c.origin + ": " + e.what());
  }
}

std::vector<std::string> schedule_table_problems(const ScheduleTable& table,
                                                 const std::string& origin) {
  return CheckedScheduleTable(table, origin).problems();
}

size_t install_schedule_table(const fs::path& file, std::ostream& warn) {
  ScheduleTable t;
  try {
    t = read_schedule_table(file);
  } catch (const std::exception& e) {
    return install_nothing(warn, e.what());  // names the file already
  }
  return install_schedule_table(t, file.string(), warn);
}

size_t install_schedule_table(const ScheduleTable& table, const std::string& origin,
                              std::ostream& warn) {
  return CheckedScheduleTable(table, origin).install(warn);
}

}  // namespace sandwich::engine
