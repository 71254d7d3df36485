// Quantized files under an explicit --dtype: their tensors are dequantized (bit for bit as ggml
// does) and stored as BF16 or F32 (by default they stay quantized, on the quantized kernels).
#include <memory>
#include <set>
#include <vector>

#include "formats/model_source.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

namespace sandwich::engine {

void widen_quantized_tensors(ModelSource& src, kernels::DType to, std::vector<std::string>& notes,
                             LayerRange layers) {
  std::set<std::string> types;
  for (auto& [name, t] : src.tensors) {
    if (!t.qtype || !stage_holds_tensor(name, layers, src.config)) continue;
    const int64_t n = t.elements();
    const size_t es = kernels::dtype_size(to);
    auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n) * es);
    const auto& info = kernels::qtype_info(*t.qtype);
    const int64_t per_row = t.shape.empty() ? n : t.shape.back();
    const int64_t rows = n / per_row;
    const auto* blocks = static_cast<const uint8_t*>(t.data);
    const int64_t row_bytes = per_row / info.block_elems * info.block_bytes;
    std::vector<float> row(static_cast<size_t>(per_row));
    const kernels::QType qtype = *t.qtype;  // clang's OpenMP cannot capture a structured binding
#pragma omp parallel for firstprivate(row) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_ref(qtype, blocks + r * row_bytes, row.data(), per_row);
      uint8_t* dst = out->data() + static_cast<size_t>(r * per_row) * es;
      for (int64_t c = 0; c < per_row; ++c)
        kernels::store_from_f32(dst, static_cast<size_t>(c), to, row[c]);
    }
    types.insert(std::string(info.name));
    t.data = out->data();
    t.dtype = to;
    t.qtype.reset();
    src.keep_alive.push_back(out);
  }
  if (types.empty()) return;
  std::string list;
  for (const auto& ty : types) list += (list.empty() ? "" : ", ") + ty;
  notes.push_back("dequantizing " + list + " weights to " + std::string(kernels::dtype_name(to)) +
                  " as --dtype asks (without it they stay quantized)");
}

}  // namespace sandwich::engine
