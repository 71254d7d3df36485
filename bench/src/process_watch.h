#pragma once
// What the soak test reads of the server process from /proc (Linux): its resident memory and
// the processes it started (its tensor-parallel ranks).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sandwich::bench {

// A field of /proc/pid/status in bytes ("VmRSS", "RssAnon", ...); 0 if the process is gone.
uint64_t status_bytes(pid_t pid, const std::string& field);

// Whether pid runs (a zombie, killed but not yet reaped, does not).
bool alive(pid_t pid);

// Every live descendant of pid (children, their children, ...), zombies left out.
std::vector<pid_t> descendants(pid_t pid);

// The short name the kernel keeps for pid (/proc/pid/comm), "" if gone.
std::string process_name(pid_t pid);

}  // namespace sandwich::bench
