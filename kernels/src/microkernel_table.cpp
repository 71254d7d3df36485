// The table of every compiled micro-kernel, and lookups into it.
#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {

void add_avx512_microkernels(std::vector<MicroKernel>& t);
void add_avx2_microkernels(std::vector<MicroKernel>& t);
void add_scalar_microkernels(std::vector<MicroKernel>& t);

std::string MicroKernel::name() const {
  return std::string(isa_name(isa)) + "_" + std::string(dtype_name(weights)) + "_" +
         std::to_string(um) + "x" + std::to_string(un);
}

const std::vector<MicroKernel>& microkernel_table() {
  static const std::vector<MicroKernel> table = [] {
    std::vector<MicroKernel> t;
    add_avx512_microkernels(t);
    add_avx2_microkernels(t);
    add_scalar_microkernels(t);
    return t;
  }();
  return table;
}

const MicroKernel* find_microkernel(Isa isa, DType weights, int um, int un) {
  if (!cpu_has(isa)) return nullptr;
  for (const auto& k : microkernel_table())
    if (k.isa == isa && k.weights == weights && k.um == um && k.un == un) return &k;
  return nullptr;
}

Isa gemm_isa(DType weights) {
  const Isa cpu = cpu_isa();
  if (cpu == Isa::Avx512Bf16) return weights == DType::BF16 ? Isa::Avx512Bf16 : Isa::Avx512;
  // AVX-512 without vdpbf16ps: the AVX2 kernels widen BF16 (an AVX-512 widening variant would
  // be faster; no such CPU is a target today).
  if (cpu == Isa::Avx512) return weights == DType::BF16 ? Isa::Avx2 : Isa::Avx512;
  return cpu;
}

}  // namespace sandwich::kernels
