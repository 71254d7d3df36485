#include "kernels/quantize.h"

#include <stdexcept>
#include <string>

#include "quantize_impl.h"

namespace sandwich::kernels {

int64_t quantized_bytes(QType t, int64_t n) {
  const QTypeInfo& info = qtype_info(t);
  return n / info.block_elems * info.block_bytes;
}

void quantize_ref(QType t, const float* x, void* dst, int64_t n) {
  const QTypeInfo& info = qtype_info(t);
  if (n % info.block_elems != 0)
    throw std::invalid_argument("quantize_ref: " + std::to_string(n) + " weights is not a " +
                                "whole number of " + std::string(info.name) + " blocks");
  const int64_t nb = n / info.block_elems;
  if (info.block_elems == kQK)
    quantize_legacy(t, x, dst, nb);
  else
    quantize_k(t, x, dst, nb);
}

}  // namespace sandwich::kernels
