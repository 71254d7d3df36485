#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/pipeline/pipeline.h"

namespace sandwich::engine {

std::vector<LayerRange> pipeline_layer_split(const ModelConfig& c, int stages,
                                             const std::vector<int32_t>& given) {
  const int32_t L = c.n_layers;
  if (stages < 1) throw std::invalid_argument("--pipeline-parallel must be at least 1");
  if (stages > L)
    throw std::invalid_argument("--pipeline-parallel " + std::to_string(stages) +
                                " is more nodes than the model has layers (" + std::to_string(L) +
                                "): every node needs at least one");
  std::vector<int32_t> counts = given;
  if (!counts.empty()) {
    std::string list;
    int64_t sum = 0;
    for (int32_t n : counts) {
      if (!list.empty()) list += ',';
      list += std::to_string(n);
      sum += n;
    }
    if (static_cast<int>(counts.size()) != stages)
      throw std::invalid_argument("--layer-split " + list + " gives " +
                                  std::to_string(counts.size()) + " nodes, but there are " +
                                  std::to_string(stages) + " (--pipeline-parallel)");
    if (std::any_of(counts.begin(), counts.end(), [](int32_t n) { return n < 1; }))
      throw std::invalid_argument("--layer-split " + list +
                                  ": every node needs at least one layer");
    if (sum != L)
      throw std::invalid_argument("--layer-split " + list + " sums to " + std::to_string(sum) +
                                  " layers, but the model has " + std::to_string(L));
  } else {
    // The output head in layers, at a quarter of its matrix against one layer's: a decode step
    // reads it whole, a prefill step uses it for its sequences' last tokens only (and the nodes'
    // balance matters most where many micro-batches are in flight: long prefill steps).
    const double layer = static_cast<double>(c.dim) * (2.0 * c.q_dim() + 2.0 * c.kv_dim()) +
                         3.0 * static_cast<double>(c.dim) * c.ffn_dim;
    const double head = 0.25 * static_cast<double>(c.vocab_size) * c.dim / layer;
    // The last node's count minimising the busiest node; the rest share what is left evenly.
    int32_t best_last = 1;
    double best = 1e300;
    for (int32_t last = 1; last <= L - (stages - 1); ++last) {
      const int32_t rest = L - last;
      const double others = stages > 1 ? std::ceil(static_cast<double>(rest) / (stages - 1)) : 0;
      if (stages == 1 && rest > 0) continue;
      const double busiest = std::max(others, last + head);
      if (busiest < best - 1e-9) {
        best = busiest;
        best_last = last;
      }
    }
    counts.assign(stages, 0);
    counts.back() = best_last;
    const int32_t rest = L - best_last;
    for (int s = 0; s + 1 < stages; ++s)
      counts[s] = rest / (stages - 1) + (s < rest % (stages - 1) ? 1 : 0);
  }
  std::vector<LayerRange> out;
  int32_t at = 0;
  for (int32_t n : counts) {
    out.push_back({at, at + n});
    at += n;
  }
  return out;
}

}  // namespace sandwich::engine
