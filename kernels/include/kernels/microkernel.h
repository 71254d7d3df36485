#pragma once
// Micro-kernels: a uM x uN register tile of C that streams K. Every shape that fits the vector
// register file without spills is instantiated at compile time and listed in one table, with
// its ISA and register use, so the cost model and the tuner can pick among them.
//
// Operands (see gemm.h for the packed weight layout):
//   A: uM rows of activations, row stride lda elements (bf16 for BF16 weights, f32 for F32);
//   B: a packed weight panel at a k offset and a column offset inside the 64-column panel;
//   C: uM rows of uN floats, row stride ldc; C = A*B, or C += A*B when accumulate is set.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

// Columns of one packed weight panel: four 16-float vectors.
constexpr int kPanel = 64;

using MicroKernelFn = void (*)(const void* a, int64_t lda, const void* b, int64_t k, float* c, int64_t ldc,
                               bool accumulate);

struct MicroKernel {
  Isa isa;
  DType weights;  // F32 or BF16
  int um;         // rows of the tile
  int un;         // columns of the tile (divides kPanel)
  int registers;  // vector registers the tile needs (accumulators + B vectors + broadcast)
  MicroKernelFn fn;
  std::string name() const;  // e.g. "avx512bf16_bf16_6x64"
};

// All compiled micro-kernels (whether or not this CPU can run them).
const std::vector<MicroKernel>& microkernel_table();
// The runnable kernel of exactly this shape, or nullptr.
const MicroKernel* find_microkernel(Isa isa, DType weights, int um, int un);
// The widest (largest un, then largest um <= max_um) runnable kernel for weights on isa.
const MicroKernel* best_microkernel(Isa isa, DType weights, int max_um);
// The ISA the GEMM uses for these weights on this CPU.
Isa gemm_isa(DType weights);

}  // namespace sandwich::kernels
