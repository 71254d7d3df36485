#include <algorithm>

#include "engine/formats/file_weights.h"
#include "engine/formats/model.h"
#include "engine/runtime/executor.h"
#include "tuner/planner/plan_stages.h"
#include "tuner/search_setup.h"

namespace sandwich::tuner {

PlanModel describe_plan_model(engine::LoadOptions lo, bool shape_only) {
  PlanModel m;
  if (lo.load_format == engine::LoadFormat::Dummy || shape_only) {
    m.config = load_model_shape(lo.model, "plan");
    m.weights = lo.dtype == engine::WeightDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
    // A file's own matrices, from its header: a quantized one streams under a byte per weight.
    if (lo.load_format != engine::LoadFormat::Dummy && lo.dtype == engine::WeightDType::Auto)
      if (const auto fw = engine::file_weights(lo.model)) {
        m.bytes_per_weight = fw->bytes_per_weight;
        m.file_quantized = fw->quantized;
        if (!fw->quantized && fw->bytes_per_weight >= 4) m.weights = kernels::DType::F32;
      }
  } else {
    lo.require_tokenizer = false;
    const auto model = engine::load_model(lo);
    m.config = model->config;
    m.weights = model->weight_dtype() == engine::WeightDType::F32 ? kernels::DType::F32
                                                                  : kernels::DType::BF16;
    m.weights_file = lo.model;
    m.bytes_per_weight = model->bytes_per_weight;
    m.types = engine::matrix_types(*model);
    m.storage = model->weight_storage;
    m.storage_name = model->weight_storage_name;
    for (int r = 1; r <= std::min(64, m.config.n_kv_heads); ++r) {
      if (m.config.n_kv_heads % r == 0 && engine::rank_count_fits(*model, r))
        m.rank_counts.insert(r);
    }
  }
  m.dtype = m.weights == kernels::DType::F32 ? "f32" : "bf16";
  if (m.storage.empty()) {
    m.types = engine::uniform_matrix_types(m.config, m.dtype);
    m.storage = m.storage_name = m.dtype;
  }
  m.quantized = m.storage != m.dtype;
  return m;
}

}  // namespace sandwich::tuner
