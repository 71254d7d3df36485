#include "kernels/cpu_features.h"

#include <cstdlib>
#include <string>

namespace sandwich::kernels {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx512Bf16:
      return "avx512bf16";
  }
  return "?";
}

namespace {

Isa detect() {
  __builtin_cpu_init();
  Isa best = Isa::Scalar;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::Avx2;
  if (best == Isa::Avx2 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    best = Isa::Avx512;
  if (best == Isa::Avx512 && __builtin_cpu_supports("avx512bf16")) best = Isa::Avx512Bf16;
  if (const char* cap = std::getenv("SANDWICH_ISA"); cap && *cap) {
    const std::string c = cap;
    const Isa want = c == "scalar"   ? Isa::Scalar
                     : c == "avx2"   ? Isa::Avx2
                     : c == "avx512" ? Isa::Avx512
                                     : best;
    if (static_cast<int>(want) < static_cast<int>(best)) best = want;
  }
  return best;
}

}  // namespace

Isa cpu_isa() {
  static const Isa isa = detect();
  return isa;
}

bool cpu_has(Isa isa) {
  return static_cast<int>(isa) <= static_cast<int>(cpu_isa());
}

bool cpu_is_amd() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
  }();
  return amd;
}

}  // namespace sandwich::kernels
