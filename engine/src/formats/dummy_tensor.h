#pragma once
// The values of dummy weights, tensor by tensor (private to engine/).
#include <cstdint>
#include <string>

#include "kernels/dtype.h"

namespace sandwich::engine {

// Fills a rows x cols tensor (row-major, elements of `dtype`) with the deterministic values of
// tensor `name`: uniform with variance 1/cols for matrices (activations keep their scale through
// each layer), 1.0 for norm weights. Rows [r0, r1) only, so callers can fill in parallel.
void fill_dummy_tensor(const std::string& name, int64_t rows, int64_t cols, kernels::DType dtype,
                       uint64_t seed, int64_t r0, int64_t r1, void* dst);

}  // namespace sandwich::engine
