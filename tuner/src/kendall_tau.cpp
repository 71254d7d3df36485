#include "tuner/kendall_tau.h"

#include <cmath>

namespace sandwich::tuner {

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double x = a[i] - a[j], y = b[i] - b[j];
      if (x == 0 && y == 0) continue;
      if (x == 0)
        ++ties_a;
      else if (y == 0)
        ++ties_b;
      else if ((x > 0) == (y > 0))
        ++concordant;
      else
        ++discordant;
    }
  }
  const double n =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return n > 0 ? (concordant - discordant) / n : 1.0;
}

}  // namespace sandwich::tuner
