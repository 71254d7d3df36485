#pragma once
// What names this CPU beside its instruction sets (cpu_features.h): its model and its cache
// sizes. A tuned schedule table records them, as schedules measured on one CPU say little of
// another.
#include <cstdint>
#include <string>

namespace sandwich::kernels {

struct CpuIdentity {
  std::string model;  // /proc/cpuinfo "model name" ("unknown CPU" where it has none)
  // The first CPU's data and unified caches by level, from sysfs (0 where it has none).
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};

// Read at the first call: the CPU does not change under a running process.
const CpuIdentity& cpu_identity();

}  // namespace sandwich::kernels
