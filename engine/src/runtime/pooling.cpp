#include "engine/runtime/pooling.h"

#include <cmath>

namespace sandwich::engine {

std::vector<float> normalized_embedding(std::span<const double> pooled) {
  double sq = 0;
  for (double v : pooled) sq += v * v;
  const double scale = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
  std::vector<float> out(pooled.size());
  for (size_t i = 0; i < pooled.size(); ++i) out[i] = static_cast<float>(pooled[i] * scale);
  return out;
}

}  // namespace sandwich::engine
