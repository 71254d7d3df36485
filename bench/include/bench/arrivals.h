#pragma once
// When each benchmark request is released: a gamma renewal process as in vLLM's serving
// benchmark. Inter-arrival gaps ~ Gamma(shape = burstiness, scale = 1 / (rate * burstiness)),
// so the mean gap is 1 / rate whatever the burstiness; burstiness 1 is a Poisson process,
// below 1 burstier, above 1 more regular. The first request leaves at t = 0.
#include <cstdint>
#include <vector>

namespace sandwich::bench {

// Seconds since the start of the run, non-decreasing. rate = +inf releases everything at 0.
// Throws std::invalid_argument unless rate > 0 and burstiness > 0.
std::vector<double> arrival_times(int n, double rate, double burstiness, uint64_t seed);

}  // namespace sandwich::bench
