#include "kernels/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace sandwich::kernels {

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
    const std::optional<Isa> want = value_named(cap, kIsaNames);
    if (!want)
      std::fprintf(stderr, "sandwich: SANDWICH_ISA='%s' is not %s; ignored\n", cap,
                   names_of(kIsaNames).c_str());
    else if (static_cast<int>(*want) < static_cast<int>(best))
      best = *want;
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

bool cpu_has_avx512_vnni() {
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
  }();
  return vnni && cpu_has(Isa::Avx512);
}

bool cpu_has_gfni() {
  static const bool gfni = [] {
    __builtin_cpu_init();
    const char* off = std::getenv("SANDWICH_GFNI");
    if (off && std::string_view(off) == "0") return false;
    return __builtin_cpu_supports("gfni") != 0;
  }();
  return gfni && cpu_has(Isa::Avx512);
}

bool cpu_is_amd() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
  }();
  return amd;
}

}  // namespace sandwich::kernels
