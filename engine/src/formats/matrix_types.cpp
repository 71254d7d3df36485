#include "engine/formats/matrix_types.h"

#include <stdexcept>

#include "engine/formats/model.h"
#include "formats/model_weights.h"

namespace sandwich::engine {
namespace {

std::string type_of(const kernels::PackedWeight& w) {
  return std::string(w.qtype ? kernels::qtype_info(*w.qtype).name : kernels::dtype_name(w.dtype));
}

}  // namespace

MatrixTypes matrix_types(const Model& model) {
  // The tuner keys every layer's GEMMs: a pipeline stage's absent layers have no types.
  if (!model.whole())
    throw std::invalid_argument(
        "the matrix types of every layer need the whole model, and this one holds " +
        model.layers_text());
  const ModelWeights& w = model.weights();
  MatrixTypes t;
  t.output = type_of(w.output);
  for (const LayerWeights& L : w.layers)
    t.layers.push_back({type_of(L.wq), type_of(L.wk), type_of(L.wv), type_of(L.wo),
                        type_of(L.w_gate), type_of(L.w_up), type_of(L.w_down)});
  return t;
}

MatrixTypes uniform_matrix_types(const ModelConfig& c, const std::string& type) {
  MatrixTypes t;
  t.output = type;
  t.layers.assign(static_cast<size_t>(c.n_layers), {type, type, type, type, type, type, type});
  return t;
}

}  // namespace sandwich::engine
