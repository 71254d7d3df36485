#pragma once
// Weights (f32) to ggml's quantized blocks: the inverse of dequantize_ref. The block formats are
// ggml's; the scale searches follow its published reference (round to nearest for the 32-weight
// types, a weighted least-squares search of scale and min for the K types), in its order of
// operations, so the blocks are the ones llama.cpp's quantizer writes for the same rows
// (tests/engine/dequant_llama_cpp_test.cpp).
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace sandwich::kernels {

// Quantizes n weights (a multiple of the type's block_elems) into n / block_elems consecutive
// blocks at dst. Non-finite inputs are the caller's to refuse: the result is unspecified.
void quantize_ref(QType t, const float* x, void* dst, int64_t n);

// Bytes of the blocks holding n weights (n a multiple of the type's block_elems).
int64_t quantized_bytes(QType t, int64_t n);

}  // namespace sandwich::kernels
