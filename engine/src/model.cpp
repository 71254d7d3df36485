#include "engine/model.h"

#include "model_weights.h"
#include "placed_weights.h"

namespace sandwich {

Model::Model()
    : weights_(std::make_unique<ModelWeights>()), placed_(std::make_unique<PlacedWeights>()) {}
Model::~Model() = default;

WeightDType Model::weight_dtype() const {
  // The loader stores matrices as F32 or BF16 only (F16 files become BF16).
  return weights_->dtype == kernels::DType::F32 ? WeightDType::F32 : WeightDType::BF16;
}

}  // namespace sandwich
