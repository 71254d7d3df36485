#include "engine/formats/model.h"

#include "formats/model_weights.h"
#include "runtime/placed_weights.h"

namespace sandwich::engine {

Model::Model()
    : weights_(std::make_unique<ModelWeights>()), placed_(std::make_unique<PlacedWeights>()) {}
Model::~Model() = default;

WeightDType Model::weight_dtype() const {
  // The loader stores matrices as F32 or BF16 only (F16 files become BF16).
  return weights_->dtype == kernels::DType::F32 ? WeightDType::F32 : WeightDType::BF16;
}

size_t Model::decode_read_bytes() const {
  const ModelWeights& w = *weights_;
  const size_t norm = static_cast<size_t>(config.dim) * sizeof(float);
  size_t bytes = 0;
  if (has_head()) bytes += w.output.bytes + norm;
  if (has_embedding() && w.embedding.n > 0)
    bytes += w.embedding.bytes / static_cast<size_t>(w.embedding.n);
  const LayerRange r = layers();
  for (int32_t i = r.begin; i < r.end && i < static_cast<int32_t>(w.layers.size()); ++i) {
    const LayerWeights& l = w.layers[i];
    bytes += l.wq.bytes + l.wk.bytes + l.wv.bytes + l.wo.bytes + l.w_gate.bytes + l.w_up.bytes +
             l.w_down.bytes + 2 * norm;
  }
  return bytes;
}

LayerRange Model::layers() const {
  // Checked at load (resolve_layers); a Model made by hand holds every layer.
  return {layers_.begin, layers_.end < 0 ? config.n_layers : layers_.end};
}

std::string Model::layers_text() const {
  const std::string of = std::to_string(config.n_layers);
  if (whole()) return "all " + of + " layers";
  std::string s = "layers " + layer_range_text(layers()) + " of " + of;
  if (has_embedding()) s += " + embedding";
  if (has_head()) s += " + head";
  return s;
}

}  // namespace sandwich::engine
