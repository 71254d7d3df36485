#include "bench/arrivals.h"

#include <cmath>
#include <random>
#include <stdexcept>

namespace sandwich::bench {

std::vector<double> arrival_times(int n, double rate, double burstiness, uint64_t seed) {
  if (!(rate > 0)) throw std::invalid_argument("request rate must be > 0 (or inf)");
  if (!(burstiness > 0) || std::isinf(burstiness))
    throw std::invalid_argument("burstiness must be a positive number");
  std::vector<double> t(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (std::isinf(rate)) return t;
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  for (size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] + gap(rng);
  return t;
}

}  // namespace sandwich::bench
