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
  size_t bytes = w.output.bytes + norm;
  if (w.embedding.n > 0) bytes += w.embedding.bytes / static_cast<size_t>(w.embedding.n);
  for (const LayerWeights& l : w.layers)
    bytes += l.wq.bytes + l.wk.bytes + l.wv.bytes + l.wo.bytes + l.w_gate.bytes + l.w_up.bytes +
             l.w_down.bytes + 2 * norm;
  return bytes;
}

}  // namespace sandwich::engine
