#pragma once
// The DRAM read stream on a decode configuration's CPUs, measured between the engine
// benchmark's decode repetitions so that both see the same machine: the ceiling a decode step,
// which reads every weight once, is held to. Reads a buffer of at least the bytes one step reads
// (and 1 GiB, well past any cache), every thread its share, as the calibration's stream probe
// does.
#include <cstddef>
#include <cstdlib>
#include <memory>

#include "kernels/thread_team.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

class DecodeStream {
 public:
  DecodeStream(const topotree::ServiceConfig& config, size_t step_bytes);
  // One read of the whole buffer, in GB/s.
  double gbs();

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  kernels::ThreadTeam team_;
  size_t bytes_;
  std::unique_ptr<char, Free> buf_;
};

}  // namespace sandwich::engine
