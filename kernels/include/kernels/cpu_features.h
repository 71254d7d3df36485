#pragma once
// Which instruction sets this CPU offers; kernels pick their variant from it at run time.
#include <string_view>

#include "common/enum_names.h"

namespace sandwich::kernels {

enum class Isa : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };
inline constexpr EnumName<Isa> kIsaNames[] = {{Isa::Scalar, "scalar"},
                                              {Isa::Avx2, "avx2"},
                                              {Isa::Avx512, "avx512"},
                                              {Isa::Avx512Bf16, "avx512bf16"}};
constexpr std::string_view isa_name(Isa isa) {
  return name_of(isa, kIsaNames);
}
// The best ISA of this CPU. SANDWICH_ISA=scalar|avx2|avx512|avx512bf16 caps it, for tests and
// comparisons (an unknown value is ignored with a warning on stderr); both are read once per
// process, at the first call, so set the variable before the process starts (ctest's
// ENVIRONMENT does).
Isa cpu_isa();
// Whether kernels of this ISA may run: the one check every kernel's dispatch makes.
bool cpu_has(Isa isa);
// Whether the CPU has AVX512_VNNI (vpdpbusd on 512-bit vectors), which the AVX-512 kernels of
// quantized weights need besides AVX512BW, and whether SANDWICH_ISA leaves AVX-512 on.
bool cpu_has_avx512_vnni();
// Whether the CPU has GFNI (with AVX-512 left on): the AVX-512 kernels of quantized weights move
// bits with vgf2p8affineqb then. SANDWICH_GFNI=0 turns it off, so tests cover both bodies.
bool cpu_has_gfni();
// Whether this is an AMD CPU: some schedule defaults were measured to differ by vendor.
bool cpu_is_amd();

}  // namespace sandwich::kernels
