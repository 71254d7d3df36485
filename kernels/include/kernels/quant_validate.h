#pragma once
// Checks of quantized blocks read from a file, before any kernel sees them.
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace sandwich::kernels {

// Index of the first of nblocks blocks whose scale (d, and dmin or m where the type has one)
// is NaN or infinite; -1 if there is none.
int64_t find_nonfinite_scale(QType t, const void* blocks, int64_t nblocks);

}  // namespace sandwich::kernels
