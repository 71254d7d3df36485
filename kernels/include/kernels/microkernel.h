#pragma once
// Micro-kernels: a uM x uN register tile of C that streams K. Every shape that fits the vector
// register file without spills is instantiated at compile time and listed in one table, with
// its ISA and register use, so the cost model and the tuner can pick among them.
//
// Operands of a call (the packed weight layout is described in gemm.h):
//   A: one packed activation panel of exactly um rows (see pack_activations below): K step j
//      of row m at a + (j * um + m) * g elements, where g = k_group() elements make one step
//      (2 for BF16 weights: a k pair, the operand of vdpbf16ps; 1 for F32 weights). Elements are
//      BF16 for the vdpbf16ps kernels and F32 for all others.
//   B: a packed weight panel at a K step and a column offset inside the 64-column panel; step j
//      at b + j * kPanel * g elements.
//   C: um rows of un floats, row stride ldc; C = A*B, or C += A*B when accumulate is set.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

// Columns of one packed weight panel: four 16-float vectors, 256 bytes of BF16 k-pairs.
constexpr int kPanel = 64;

// steps: K steps to run (k / g); a and b already point at the first one. pf: where the
// prefetching variants fetch cache lines into L2 (the next B chunk; any address is safe).
using MicroKernelFn = void (*)(const void* a, const void* b, int64_t steps, float* c, int64_t ldc,
                               bool accumulate, const void* pf);

struct MicroKernel {
  Isa isa;
  DType weights;  // F32 or BF16
  int um;         // rows of the tile
  int un;         // columns of the tile (divides kPanel)
  int registers;  // vector registers the tile needs: accumulators + B vectors + broadcasts
  int acc_sets;   // independent accumulator sets (2 for tiles too small to hide the FMA latency)
  // fn[0] ignores pf; fn[i] also prefetches 2^(i-1) lines from pf per step (1, 2, 4), so the
  // tiles sweeping one B chunk can fetch the next from DRAM while they compute.
  MicroKernelFn fn[4];
  // fn with one accumulator set (fn itself where acc_sets is 1): every element of C then sums
  // its K steps strictly one after the other, in every tile height and whatever the K blocks,
  // so a row's result cannot depend on the tile that computed it (batch-invariant GEMMs).
  MicroKernelFn one_set[4];
  std::string name() const;  // e.g. "avx512bf16_bf16_6x64"
};

// K elements one micro-kernel step consumes for these weights (BF16 pairs: 2).
constexpr int k_group(DType weights) {
  return weights == DType::BF16 ? 2 : 1;
}
// Element type of packed activations for kernels of this ISA and weight type.
constexpr DType activation_type(Isa isa, DType weights) {
  return isa == Isa::Avx512Bf16 && weights == DType::BF16 ? DType::BF16 : DType::F32;
}

// All compiled micro-kernels (whether or not this CPU can run them).
const std::vector<MicroKernel>& microkernel_table();
// The kernel of exactly this shape if this CPU can run it, else nullptr.
const MicroKernel* find_microkernel(Isa isa, DType weights, int um, int un);
// The ISA the GEMM uses for these weights on this CPU.
Isa gemm_isa(DType weights);

// Packs rows [0, rows) of x (f32, row stride ldx, k columns) into one activation panel of
// `rows` rows for kernels of (isa, weights): k_steps steps, columns past k zero. `out` holds
// k_steps * k_group(weights) * rows elements of activation_type(isa, weights).
void pack_activations(Isa isa, DType weights, const float* x, int64_t ldx, int64_t rows, int64_t k,
                      int64_t k_steps, void* out);

}  // namespace sandwich::kernels
