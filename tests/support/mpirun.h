#pragma once
// Starting the programs under mpirun on this machine, as issue 29's tests do: every node a
// process, TCP only (every hop crosses the network stack), more processes than cores allowed.
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_data.h"

namespace sandwich::test {

// True when mpirun is on the PATH (tests that need it skip without).
inline bool have_mpirun() {
  return std::system("command -v mpirun >/dev/null 2>&1") == 0;
}

#define SANDWICH_REQUIRE_MPIRUN() \
  if (!::sandwich::test::have_mpirun()) GTEST_SKIP() << "mpirun is not installed"

// The launcher a command line starts with to run `processes` nodes. Under the sanitizers the
// nodes' leak check is off: OpenMPI's own allocations outlive MPI_Finalize (in plug-ins it has
// unloaded, where no suppression can name them); the pipeline's code is leak-checked in-process
// by the engine tests.
inline std::string mpirun_prefix(int processes) {
  std::string asan = "detect_leaks=0";
  if (const char* v = std::getenv("ASAN_OPTIONS"); v && *v) asan = std::string(v) + ":" + asan;
  return "mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -x ASAN_OPTIONS=" + asan +
         " -np " + std::to_string(processes);
}

// MPI's rank of a process mpirun started (-1 when it is not one, or is gone).
inline int mpi_rank_of(int pid) {
  const std::string env = slurp("/proc/" + std::to_string(pid) + "/environ");
  const std::string key = "OMPI_COMM_WORLD_RANK=";
  for (size_t at = 0; at < env.size();) {
    const size_t end = env.find('\0', at);
    const std::string var = env.substr(at, end == std::string::npos ? end : end - at);
    if (var.rfind(key, 0) == 0) return std::atoi(var.c_str() + key.size());
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return -1;
}

// The process of MPI rank `rank` among those mpirun (`mpirun_pid`) started with names beginning
// with `name`; -1 when there is none.
inline int mpi_rank_pid(int mpirun_pid, int rank, const std::string& name) {
  for (int pid : children_named(mpirun_pid, name))
    if (mpi_rank_of(pid) == rank) return pid;
  return -1;
}

// True while `pid` exists and is not a zombie.
inline bool process_alive(int pid) {
  const char s = proc_stat(pid).state;
  return s != 0 && s != 'Z';
}

}  // namespace sandwich::test
