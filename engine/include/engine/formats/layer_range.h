#pragma once
// The layers a pipeline stage holds: its share of a model's weights and of the KV cache. Its own
// header so that the KV cache can name it without the Model.
#include <cstdint>
#include <string>

namespace sandwich::engine {

// The layers a pipeline stage holds, [begin, end); end -1 = through the last layer. The stage
// holding layer 0 also holds the token embedding; the one holding the last layer also the final
// norm and the output head.
struct LayerRange {
  int32_t begin = 0;
  int32_t end = -1;
  bool operator==(const LayerRange&) const = default;

  bool holds(int32_t layer) const { return layer >= begin && (end < 0 || layer < end); }
  int32_t size() const { return end - begin; }  // of a resolved range
};

// `r` with its end resolved (never -1) for a model of `n_layers`; a range outside the model or
// empty is a std::runtime_error naming it and the layer count.
LayerRange resolve_layers(LayerRange r, int32_t n_layers);

// "0-10" (inclusive, as start-up lines count layers).
std::string layer_range_text(LayerRange resolved);

}  // namespace sandwich::engine
