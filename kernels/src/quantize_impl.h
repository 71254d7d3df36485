#pragma once
// The quantizers of each family, behind quantize_ref; nb blocks from x.
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace sandwich::kernels {

void quantize_legacy(QType t, const float* x, void* dst, int64_t nb);  // Q4_0 .. Q8_0
void quantize_k(QType t, const float* x, void* dst, int64_t nb);       // Q4_K .. Q8_K

}  // namespace sandwich::kernels
