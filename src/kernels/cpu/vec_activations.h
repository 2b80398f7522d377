// Internal: element-wise activations on the float traits V of kernels_impl.h (one register of
// V::W floats), shared by the ISA tables' row functions and the bf16 GEMM's fused epilogue
// (bf16_gemm_to_activations), so the two give the same bits. Include after the traits of the
// ISA in use (vec_avx512.h or an ISA file's own), inside no namespace.
#pragma once

#include <cmath>

namespace folio::kernels::detail {
namespace {

// erf(z): std::erf on the scalar table (the reference); on SIMD tables Abramowitz & Stegun 7.1.26,
// erf|z| = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p |z|), absolute error below
// 1.5e-7 (about one f32 ulp of 1), with the sign of z.
template <class V>
typename V::reg erf_of(typename V::reg z) {
  if constexpr (V::W == 1) {
    return std::erf(z);
  } else {
    const typename V::reg a = V::abs(z), one = V::set1(1.0f);
    const typename V::reg t = V::div(one, V::fma(V::set1(0.3275911f), a, one));
    typename V::reg poly = V::set1(1.061405429f);
    poly = V::fma(poly, t, V::set1(-1.453152027f));
    poly = V::fma(poly, t, V::set1(1.421413741f));
    poly = V::fma(poly, t, V::set1(-0.284496736f));
    poly = V::fma(poly, t, V::set1(0.254829592f));
    const typename V::reg tail = V::mul(V::mul(poly, t), V::exp(V::mul(V::mul(a, a), V::set1(-1.0f))));
    return V::copysign(V::add(one, V::mul(tail, V::set1(-1.0f))), z);
  }
}

// 0.5 v (1 + erf(v / sqrt 2)): the exact GELU of the SAM MLPs.
template <class V>
typename V::reg gelu_erf_of(typename V::reg v) {
  const typename V::reg half = V::set1(0.5f), one = V::set1(1.0f), inv_sqrt2 = V::set1(0.70710678118654752f);
  return V::mul(V::mul(half, v), V::add(one, erf_of<V>(V::mul(v, inv_sqrt2))));
}

// v sigmoid(1.702 v) = v / (1 + exp(-1.702 v)): CLIP's quick_gelu (SIMD traits only). The SIMD exp
// clamps its argument to exp's float range, so a very negative v gives -0 as std::exp's infinity
// does.
template <class V>
typename V::reg quick_gelu_of(typename V::reg v) {
  return V::div(v, V::add(V::set1(1.0f), V::exp(V::mul(V::set1(-1.702f), v))));
}

}  // namespace
}  // namespace folio::kernels::detail
