#pragma once
// A GEMM profiler for the tuner's tests: the seconds a given function says, and a log of every
// shape and schedule the tuner asked about.
#include <functional>
#include <utility>
#include <vector>

#include "kernels/schedule.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner::test {

struct Measured {
  kernels::GemmShape shape;
  kernels::Schedule schedule;
};

class LoggingProfiler : public GemmProfiler {
 public:
  using SecondsFn = std::function<double(const kernels::GemmShape&, const kernels::Schedule&)>;
  explicit LoggingProfiler(SecondsFn f) : f_(std::move(f)) {}
  double seconds(const kernels::GemmShape& s, const kernels::Schedule& c) override {
    log.push_back({s, c});
    return f_(s, c);
  }
  std::vector<Measured> log;

 private:
  SecondsFn f_;
};

}  // namespace sandwich::tuner::test
