#pragma once
// Three requests of mixed prompt and output lengths, for the simulator's tests.
#include "tuner/trace_sampler.h"

namespace sandwich::tuner::test {

inline RequestTrace small_trace() {
  RequestTrace t;
  t.requests = {{200, 100}, {600, 50}, {40, 300}};
  t.source = "test";
  return t;
}

}  // namespace sandwich::tuner::test
