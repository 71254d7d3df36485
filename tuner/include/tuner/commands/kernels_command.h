#pragma once
// `sandwich-tune kernels`: the GEMM schedules of every GEMM of a model (and the attention
// kernels' blocks) tuned for every M up to a limit, on this machine's cores as a service
// configuration pins them, into a schedule table.
#include <string>

#include "engine/formats/model.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner {

struct KernelsRequest {
  engine::LoadOptions load;
  std::string config;  // RxT or JSON; "" : one rank of all CPUs
  std::string out;     // the schedule table to write
  bool resume = false, no_attention = false;
  GemmTunerOptions tuner;
  ProfilerOptions profiler = [] {
    ProfilerOptions p;
    p.min_seconds = 0.002;
    return p;
  }();
};

// Tunes with progress on stderr and prints the summary; returns 0, or 130 when Ctrl-C stopped
// it with the table so far written for --resume. Throws CliError for bad options.
int run_kernels(KernelsRequest r);

}  // namespace sandwich::tuner
