#include "engine/formats/layer_range.h"

#include <stdexcept>

namespace sandwich::engine {

LayerRange resolve_layers(LayerRange r, int32_t n_layers) {
  LayerRange out{r.begin, r.end < 0 ? n_layers : r.end};
  // -1 is the only end that means "through the last"; other negatives are mistakes.
  if (r.begin < 0 || r.end < -1 || out.end > n_layers || out.begin >= out.end)
    throw std::runtime_error("layer range [" + std::to_string(r.begin) + ", " +
                             (r.end == -1 ? std::string("end") : std::to_string(r.end)) +
                             ") does not fit a model of " + std::to_string(n_layers) +
                             " layers (give 0 <= begin < end <= " + std::to_string(n_layers) + ")");
  return out;
}

std::string layer_range_text(LayerRange r) {
  return r.size() == 1 ? std::to_string(r.begin)
                       : std::to_string(r.begin) + "-" + std::to_string(r.end - 1);
}

}  // namespace sandwich::engine
