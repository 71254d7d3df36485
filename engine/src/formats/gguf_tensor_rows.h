#pragma once
// A GGUF tensor of any type we write (f32, f16, bf16, the quantized types), filled from f32 rows
// at write time, rows converted or quantized in parallel.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/formats/gguf.h"

namespace sandwich::engine {

// Writes rows [r0, r1) (file order) of `cols` f32 values each to dst. For a vector (cols == 0)
// it is asked for row 0 of `rows` values.
using RowSource = std::function<void(int64_t r0, int64_t r1, float* dst)>;

// At write time, throws naming the tensor and row if a row holds a NaN or infinity or a value
// the type's f16 scales cannot reach. `threads`: how many convert rows at once (0: OpenMP's
// default, every core).
void add_tensor_rows(gguf::Writer& w, const std::string& name, uint32_t type, int64_t rows,
                     int64_t cols, RowSource source, int threads = 0);

}  // namespace sandwich::engine

namespace sandwich::engine {

// Writes to `out` through a temporary file beside it, so a failure leaves no half file.
void write_atomically(const gguf::Writer& w, const std::filesystem::path& out);

}  // namespace sandwich::engine
