#pragma once
// A plan: the service configuration of each phase (topotree's ServiceConfig), and how a thread
// count given on the command line becomes a configuration of one rank.
#include <filesystem>
#include <optional>
#include <string>

#include "topotree/service_config.h"

namespace sandwich {

struct Plan {
  topo::ServiceConfig prefill, decode;
  std::optional<std::filesystem::path> schedules;  // a tuned-schedule table (schedule_table.h)
};
// {"prefill": <config>, "decode": <config>, "schedules": "table.json"}: each configuration a
// JSON configuration, its short form ("2x1") or {"config": ..., ...} (a tuner's plan may hold
// more; the rest is ignored); "schedules", optional, a path relative to the plan file's folder.
// Throws std::invalid_argument naming the file.
Plan load_plan(const std::filesystem::path& file);

// The most compute threads a rank may run: 4 x this machine's CPUs. More than that only
// time-slices the spinning thread team until a step takes minutes.
int max_threads();
// A thread-count option (0: all CPUs) as a count; throws std::invalid_argument naming `what`
// (e.g. "--threads") when it is negative or above max_threads().
int resolve_threads(int threads, const std::string& what);
// One rank on the machine's first `threads` CPUs, wrapping around when threads exceed the CPUs
// (threads 0: all of them); throws like resolve_threads.
topo::ServiceConfig single_rank_config(int threads);

}  // namespace sandwich
