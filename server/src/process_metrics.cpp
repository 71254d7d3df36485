#include "process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sandwich::server {
namespace {

// /proc/stat's btime: the boot time in seconds since the epoch.
double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = 0;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

ProcessStats read_process_stats() {
  ProcessStats p;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  // Fields after the command name, which is in parentheses and may hold spaces: the state is
  // field 3 (fields[0] here).
  const size_t close = line.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> f;
    for (std::string w; rest >> w;) f.push_back(w);
    auto field = [&](size_t n) { return n - 3 < f.size() ? std::stod(f[n - 3]) : 0.0; };
    p.cpu_seconds = (field(14) + field(15)) / ticks;
    p.start_time_seconds = boot_time() + field(22) / ticks;
    p.virtual_memory_bytes = field(23);
    p.resident_memory_bytes = field(24) * page;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++p.open_fds;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    p.max_fds = lim.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(lim.rlim_cur);
  return p;
}

}  // namespace sandwich::server
