#include <vector>

#include "kernels/microkernel.h"

namespace sandwich::kernels {

void add_avx512_microkernels(std::vector<MicroKernel>& t);
void add_avx2_microkernels(std::vector<MicroKernel>& t);
void add_scalar_microkernels(std::vector<MicroKernel>& t);

std::string MicroKernel::name() const {
  return std::string(isa_name(isa)) + "_" + std::string(dtype_name(weights)) + "_" + std::to_string(um) + "x" +
         std::to_string(un);
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

const MicroKernel* best_microkernel(Isa isa, DType weights, int max_um) {
  const MicroKernel* best = nullptr;
  if (!cpu_has(isa)) return nullptr;
  for (const auto& k : microkernel_table()) {
    if (k.isa != isa || k.weights != weights || k.um > max_um) continue;
    if (!best || k.un > best->un || (k.un == best->un && k.um > best->um)) best = &k;
  }
  return best;
}

Isa gemm_isa(DType weights) {
  const Isa cpu = cpu_isa();
  if (cpu == Isa::Avx512Bf16) return weights == DType::BF16 ? Isa::Avx512Bf16 : Isa::Avx512;
  if (cpu == Isa::Avx512) return weights == DType::BF16 ? Isa::Avx2 : Isa::Avx512;  // no vdpbf16ps
  return cpu;
}

}  // namespace sandwich::kernels
