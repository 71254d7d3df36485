#pragma once
// A tuned-schedule table that covers every GEMM a tool runs, with valid schedules that differ
// from the cost model's: the keys come from the tool's own miss warnings under an empty table,
// the schedules from default_schedule with other slice sizes. For the tests that check a tool's
// output stays the same with a table loaded (test binaries that link the kernels).
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "command.h"
#include "engine/plans/schedule_table.h"
#include "kernels/microkernel.h"
#include "kernels/schedule.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::test {

inline engine::ScheduleTable empty_schedule_table() {
  engine::ScheduleTable t;
  t.machine = engine::this_machine_fingerprint("0-1");
  t.model = "test";
  t.config = "test";
  return t;
}

// `tool_command` runs the tool (its stdout and stderr are captured here) and gets
// " --schedules FILE" appended. Returns the number of keys covered; the table is at `file`.
inline int write_covering_schedule_table(const std::string& tool_command,
                                         const std::filesystem::path& file) {
  engine::write_schedule_table(empty_schedule_table(), file);
  const CommandResult r = run_command(tool_command + " --schedules " + file.string());
  static const std::regex miss(
      R"(the table has no entry for N=(\d+) K=(\d+) (\w+) threads=(\d+)( pair)?;)");
  engine::ScheduleTable t = empty_schedule_table();
  std::set<std::string> seen;  // each rank process reports its misses
  int covered = 0;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), miss), end; it != end; ++it) {
    const auto& m = *it;
    if (!seen.insert(m[0]).second) continue;
    engine::TunedGemm g;
    g.n = std::stoll(m[1]);
    g.k = std::stoll(m[2]);
    g.dtype = m[3];
    g.threads = std::stoi(m[4]);
    g.pair = m[5].matched;
    kernels::GemmKey key{g.n, g.k, kernels::DType::BF16, g.threads, g.pair};
    kernels::set_weight_type(key, g.dtype);  // "f32", "bf16" or a quantized type
    int variant = 0;
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{1, 1}, {2, 16}, {17, 1 << 16}}) {
      kernels::Schedule s = kernels::default_schedule(kernels::shape_at(key, lo));
      s.bm = s.um * (1 + variant % 3);
      s.bn = kernels::kPanel * (1 + variant % 2);
      // K blocks: whole quantized blocks, else K steps.
      s.bk = key.qtype ? kernels::qtype_info(*key.qtype).block_elems * (1 + variant)
                       : kernels::k_group(key.weights) * (16 + 40 * variant);
      ++variant;
      g.ranges.push_back({lo, hi, s.to_string(), 0, "test"});
    }
    t.gemms.push_back(std::move(g));
    ++covered;
  }
  engine::write_schedule_table(t, file);
  return covered;
}

}  // namespace sandwich::test
