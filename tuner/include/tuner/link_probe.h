#pragma once
// Measuring the link between the nodes of an MPI hostfile: the tuner starts
//   mpirun --hostfile H -np 2 --map-by node [...] <sandwich-tune> link-probe
// as a child process; the hidden `link-probe` subcommand (run_link_probe) ping-pongs 8-byte
// messages between ranks 0 and 1 for the latency and 1-4 MiB ones for the bandwidth, and rank 0
// prints one JSON line that measure_link reads back.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tuner/cluster.h"

namespace sandwich::tuner {

struct LinkMeasurement {
  double latency_us = 0;           // one way, 8-byte messages
  double gbs = 0;                  // one way, the best of 1-4 MiB messages after the latency
  std::vector<std::string> hosts;  // rank 0's and rank 1's

  NodeLink link() const;  // named "MPI ping-pong <host> <-> <host>"
  nlohmann::json to_json() const;
  static LinkMeasurement from_json(const nlohmann::json& j);  // the probe's line
};

// The nodes a hostfile names: its distinct hosts ("host slots=N", comments and blank lines
// ignored). One host alone stands for as many nodes as its slots (at least 2), so that a single
// machine runs the pipeline's ranks as nodes. Throws std::invalid_argument for a missing or
// empty file.
struct HostfileNodes {
  int nodes = 0;
  std::vector<std::string> hosts;
};
HostfileNodes read_hostfile(const std::string& hostfile);

// The command line measure_link runs: --allow-run-as-root only as root; on a single host
// --oversubscribe --mca btl tcp,self, so that the probe crosses TCP as separate nodes would.
std::vector<std::string> link_probe_command(const std::string& mpirun, const std::string& hostfile,
                                            const std::string& self_exe, bool single_host);

// Runs the probe (this executable unless `self_exe` names another) and parses its line. Throws
// std::runtime_error with one line: mpirun not found, the probe failed (its last line of
// output), or it took longer than `timeout_s`.
LinkMeasurement measure_link(const std::string& hostfile, std::string self_exe = {},
                             double timeout_s = 120);

// The hidden subcommand, under mpirun with at least 2 ranks. Returns the exit status; without
// MPI in this build it says so on stderr and returns 1.
int run_link_probe();

}  // namespace sandwich::tuner
