#pragma once
// `sandwich-tune calibrate`: this machine measured for the latency simulator (bandwidth, FMA and
// BF16 peaks, GEMM, team sync, latent groups) and, with a hostfile, its link to other nodes;
// cached for the other commands.
#include <string>

namespace sandwich::tuner {

struct CalibrateRequest {
  bool recalibrate = false;  // measure again even if a cached calibration exists
  bool json = false;
  // Also measure the link to the nodes of this MPI hostfile (link_probe.h) and record it.
  std::string hostfile;
};

// The measurements and the simulator parameters they give (text or JSON).
std::string calibration_report(const CalibrateRequest& r);

}  // namespace sandwich::tuner
