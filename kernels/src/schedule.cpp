// Schedules as text (for plans) and their validation.
#include <sstream>
#include <stdexcept>

#include "kernels/microkernel.h"
#include "kernels/schedule.h"

namespace sandwich::kernels {

std::string Schedule::to_string() const {
  std::ostringstream os;
  os << isa_name(isa) << " " << um << "x" << un << " slice " << bm << "x" << bn << "x" << bk
     << " threads " << tm << "x" << tn << "x" << tk;
  if (!prefetch) os << " noprefetch";
  if (unpack_bf16) os << " unpackbf16";
  return os.str();
}

Schedule parse_schedule(const std::string& text) {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument(
        "schedule \"" + text + "\": " + why +
        " (expected e.g. \"avx512bf16 6x64 slice 96x256x256 threads 1x2x1\")");
  };
  std::istringstream is(text);
  std::string isa, tile, w_slice, slice, w_threads, threads, extra;
  if (!(is >> isa >> tile >> w_slice >> slice >> w_threads >> threads) || w_slice != "slice" ||
      w_threads != "threads")
    bad("malformed");
  Schedule s;
  bool found = false;
  for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
    if (isa_name(i) == isa) {
      s.isa = i;
      found = true;
    }
  if (!found) bad("unknown ISA \"" + isa + "\"");
  char x1 = 0, x2 = 0;
  std::istringstream t(tile);
  if (!(t >> s.um >> x1 >> s.un) || x1 != 'x') bad("bad tile \"" + tile + "\"");
  std::istringstream sl(slice);
  if (!(sl >> s.bm >> x1 >> s.bn >> x2 >> s.bk) || x1 != 'x' || x2 != 'x')
    bad("bad slice \"" + slice + "\"");
  std::istringstream th(threads);
  if (!(th >> s.tm >> x1 >> s.tn >> x2 >> s.tk) || x1 != 'x' || x2 != 'x')
    bad("bad thread grid \"" + threads + "\"");
  while (is >> extra) {
    if (extra == "noprefetch")
      s.prefetch = false;
    else if (extra == "unpackbf16")
      s.unpack_bf16 = true;
    else
      bad("unknown flag \"" + extra + "\"");
  }
  return s;
}

GemmShape gemm_shape_of(const QuantShape& s) {
  return GemmShape{s.m, s.n, s.k, DType::BF16, s.threads, s.pair, false, s.type};
}

QuantShape quant_shape_of(const GemmShape& s) {
  if (!s.qtype)
    throw std::invalid_argument("quant_shape_of: the shape's weights are not quantized");
  return QuantShape{s.m, s.n, s.k, *s.qtype, s.threads, s.pair};
}

Schedule without_split_k(Schedule s, int64_t m, int64_t n) {
  if (s.tk <= 1) return s;
  const int64_t panels = (n + kPanel - 1) / kPanel, m_tiles = (m + s.um - 1) / s.um;
  if (int64_t{s.tn} * s.tk > panels && int64_t{s.tm} * s.tk <= m_tiles)
    s.tm *= s.tk;
  else
    s.tn *= s.tk;
  s.tk = 1;
  return s;
}

void validate_schedule(const GemmShape& s, const Schedule& c) {
  if (s.qtype) return validate_quant_schedule(quant_shape_of(s), c);
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument("schedule " + c.to_string() + ": " + why);
  };
  if (!cpu_has(c.isa)) bad("this CPU lacks " + std::string(isa_name(c.isa)));
  if (!find_microkernel(c.isa, s.weights, c.um, c.un))
    bad("no " + std::to_string(c.um) + "x" + std::to_string(c.un) + " micro-kernel for " +
        std::string(dtype_name(s.weights)) + " weights");
  // Every smaller tile height of the same width must exist for the M tails.
  for (int um = 1; um < c.um; ++um)
    if (!find_microkernel(c.isa, s.weights, um, c.un))
      bad("missing tail kernel " + std::to_string(um) + "x" + std::to_string(c.un));
  // Each factor at most the team first, so that a corrupt grid cannot overflow the product.
  if (c.tm < 1 || c.tn < 1 || c.tk < 1 || c.tm > s.threads || c.tn > s.threads ||
      c.tk > s.threads || int64_t{c.tm} * c.tn * c.tk != s.threads)
    bad("the thread grid must multiply to the team's " + std::to_string(s.threads) + " threads");
  if (c.bm < c.um || c.bm % c.um != 0)
    bad("bm must be a positive multiple of the tile's " + std::to_string(c.um) + " rows");
  if (c.bn < kPanel || c.bn % kPanel != 0) bad("bn must be a positive multiple of 64");
  const int g = k_group(s.weights);
  if (c.bk < g || c.bk % g != 0) bad("bk must be a positive multiple of " + std::to_string(g));
}

}  // namespace sandwich::kernels
