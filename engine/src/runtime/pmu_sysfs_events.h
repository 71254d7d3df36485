#pragma once
// Events a PMU names in sysfs (/sys/bus/event_source/devices/PMU/events/NAME holds terms such as
// "event=0x04,umask=0x03"; PMU/format/FIELD says where a term's bits go, "config:8-15"), turned
// into perf_event_attr words: how the memory-bus counters of uncore PMUs are found without a
// table of CPU models.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandwich::engine {

struct PmuConfigWords {
  uint64_t config = 0, config1 = 0, config2 = 0;
};

// Encodes an event's terms with the PMU's format: `format(field)` returns the format file's text
// ("config:0-7", "config1:0-15", "config:0-7,32-35"; a term without "=" is 1). Throws
// std::invalid_argument naming the term that has no format or a value that does not fit.
PmuConfigWords encode_pmu_event(std::string_view terms,
                                const std::function<std::string(std::string_view)>& format);

// One named event of one PMU, ready to open on each CPU of the PMU's cpumask (one a socket).
struct SysfsPmuEvent {
  std::string pmu, event;
  uint32_t type = 0;
  PmuConfigWords words;
  std::vector<int> cpus;
};

// The memory-bus traffic events sysfs names: Intel's integrated memory controllers
// (uncore_imc*: cas_count_read and cas_count_write, each a 64-byte access; client parts'
// data_reads and data_writes there, or uncore_imc_free_running*: data_read and data_write), AMD's
// data fabric where the kernel names DRAM-channel events (amd_df). Empty where there are none (then
// LLC misses stand in for them). `devices` is /sys/bus/event_source/devices; a PMU that cannot be
// read is skipped.
std::vector<SysfsPmuEvent> find_memory_bus_events(
    const std::filesystem::path& devices = "/sys/bus/event_source/devices");

}  // namespace sandwich::engine
