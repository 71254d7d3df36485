#pragma once
// The heart of e^x for every vector width (vec_math_avx512.h, vec_math_avx2.h), written once:
// x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, so r keeps its precision), e^r by a
// degree-6 polynomial, relative error about 2e-7 over the float range. Like those headers,
// include it inside an ISA's `#pragma GCC target` region, so it compiles for that ISA.
namespace sandwich::kernels::simd {

// e^r for x and n = round(x / ln2); the caller scales by 2^n. fma(a, b, c) and fnma(a, b, c)
// are the ISA's fused a * b + c and c - a * b: lambdas with a capture-default, since GCC compiles
// a captureless lambda's function-pointer thunk outside the target region (-Wpsabi).
template <class V, class Fma, class Fnma>
__attribute__((always_inline)) inline V exp_remainder(V x, V n, Fma fma, Fnma fnma) {
  V r = fnma(n, V{} + 0.693359375f, x);
  r = fnma(n, V{} + -2.12194440e-4f, r);
  V p = V{} + 1.9875691500e-4f;
  p = fma(p, r, V{} + 1.3981999507e-3f);
  p = fma(p, r, V{} + 8.3334519073e-3f);
  p = fma(p, r, V{} + 4.1665795894e-2f);
  p = fma(p, r, V{} + 1.6666665459e-1f);
  p = fma(p, r, V{} + 5.0000001201e-1f);
  return fma(p, r * r, r + 1.0f);
}

}  // namespace sandwich::kernels::simd
