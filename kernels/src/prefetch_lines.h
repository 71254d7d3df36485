#pragma once
// Software prefetch shared by the vector micro-kernels (baseline SSE, so any ISA's kernel can
// inline it).
#include <immintrin.h>

namespace sandwich::kernels {

// PF cache lines from pf into L2: the B chunk the driver will need next, spread over the steps
// of the tiles that precede it, so DRAM streaming overlaps the arithmetic.
template <int PF>
__attribute__((always_inline)) inline void prefetch_lines(const char* pf) {
#pragma GCC unroll 4
  for (int l = 0; l < PF; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
}

}  // namespace sandwich::kernels
