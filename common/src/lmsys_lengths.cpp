#include "common/lmsys_lengths.h"

#include <random>
#include <stdexcept>

namespace sandwich {

std::vector<LengthPair> lmsys_lengths(int n, uint64_t seed, int max_len) {
  if (max_len < 2) throw std::invalid_argument("the max model length must be >= 2");
  std::vector<LengthPair> out;
  out.reserve(static_cast<size_t>(std::max(n, 0)));
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> prompt(1.0 / kLmsysMeanPrompt),
      response(1.0 / kLmsysMeanResponse);
  while (static_cast<int>(out.size()) < n) {
    const LengthPair p{1 + prompt(rng), 1 + response(rng)};
    if (p.input + p.output <= max_len) out.push_back(p);
  }
  return out;
}

}  // namespace sandwich
