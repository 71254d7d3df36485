#pragma once
// The process_* metrics prometheus_client exports on Linux, read from /proc/self.
#include <cstdint>

namespace sandwich::server {

struct ProcessStats {
  double resident_memory_bytes = 0, virtual_memory_bytes = 0;
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0, max_fds = 0;
};

// Whatever /proc cannot tell stays 0.
ProcessStats read_process_stats();

}  // namespace sandwich::server
