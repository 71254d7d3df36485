#include "engine/formats/file_weights.h"

#include <stdexcept>

#include "engine/formats/gguf.h"
#include "formats/model_source.h"
#include "kernels/gemm.h"
#include "kernels/quant_blocks.h"

namespace sandwich::engine {

std::optional<FileWeights> file_weights(const std::filesystem::path& model) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model, ec) || detect_format(model) != FileFormat::GGUF)
    return std::nullopt;
  const gguf::Reader r(model);
  bool half = false, f32 = false, quantized = false;
  for (const auto& t : r.tensors()) {
    if (t.dims.size() != 2) continue;
    half |= t.type == 1 || t.type == 30;  // F16, BF16
    f32 |= t.type == 0;
    quantized |= kernels::qtype_from_ggml(t.type).has_value();
  }
  const kernels::DType plain = auto_matrix_storage(half, f32, quantized);
  FileWeights w;
  w.quantized = quantized;
  double bytes = 0, elements = 0;
  for (const auto& t : r.tensors()) {
    if (t.dims.size() != 2) continue;  // norms and rope factors are vectors
    const auto n = static_cast<int64_t>(t.dims[1]), k = static_cast<int64_t>(t.dims[0]);
    const auto q = kernels::qtype_from_ggml(t.type);
    // The packed size, as the loader plans it (panels of rows, blocks regrouped).
    try {
      bytes += static_cast<double>(q ? kernels::plan_packed_weight_quant(n, k, *q).bytes
                                     : kernels::plan_packed_weight(n, k, plain).bytes);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(model.string() + ": tensor '" + t.name + "': " + e.what());
    }
    elements += static_cast<double>(n) * static_cast<double>(k);
  }
  if (elements == 0) return std::nullopt;
  w.bytes_per_weight = bytes / elements;
  return w;
}

}  // namespace sandwich::engine
