// The vector math of simd_avx2.h (exp, tanh, erf, the activations) on 16 lanes: the same
// operations on the same constants in the same order, so every lane equals the AVX2 result bit
// for bit (tests/kernels/elementwise_test.cpp checks it). Include only from files compiled with
// -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/backend.h"

namespace embed::cpu::avx512 {
// Internal linkage on purpose (see simd_avx2.h).
namespace {

// Bitwise float ops with AVX-512F integer instructions (the _ps forms need AVX-512DQ).
inline __m512 and_ps(__m512 a, __m512 b) { return _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b))); }
inline __m512 andnot_ps(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_andnot_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline __m512 or_ps(__m512 a, __m512 b) { return _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b))); }

// exp(x) for x in float range: Cody-Waite range reduction + degree-6 polynomial; about 1 ulp.
inline __m512 exp_ps(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-103.972084045410f);
  x = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  // Scale by 2^n in two steps so n down to -150 still yields subnormals instead of garbage.
  const __m512i ni = _mm512_cvtps_epi32(n);
  const __m512i n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

// tanh(x) = sign(x) * (1 - 2 / (exp(2|x|) + 1)); for |x| < 0.625 a Taylor-free rational form
// loses accuracy, so small inputs use the odd polynomial below (error < 2 ulp).
inline __m512 tanh_ps(__m512 x) {
  const __m512 sign = and_ps(x, _mm512_set1_ps(-0.0f));
  const __m512 ax = andnot_ps(_mm512_set1_ps(-0.0f), x);
  const __m512 e = exp_ps(_mm512_mul_ps(ax, _mm512_set1_ps(2.0f)));
  const __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  // Small |x|: tanh x = x + x^3 * P(x^2), minimax coefficients (Cephes tanhf).
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), ax, ax);
  const __mmask16 use_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  return or_ps(_mm512_mask_blend_ps(use_small, big, small), sign);
}

// erf(x): |x| < 1 uses an odd polynomial; larger uses 1 - exp(-x^2) * R(1/|x|) style
// fit (from Cephes erff/erfcf, single precision, max error ~2 ulp).
inline __m512 erf_ps(__m512 x) {
  const __m512 sign = and_ps(x, _mm512_set1_ps(-0.0f));
  const __m512 ax = _mm512_min_ps(andnot_ps(_mm512_set1_ps(-0.0f), x), _mm512_set1_ps(10.0f));
  const __m512 z = _mm512_mul_ps(ax, ax);
  // erf(x) = x * T(x^2) for |x| < 1 (Cephes erff polynomial).
  __m512 t = _mm512_set1_ps(7.853861353153693e-5f);
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(-8.010193625184903e-4f));
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(5.188327685732524e-3f));
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(-2.685381193529856e-2f));
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(1.128358514861418e-1f));
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(-3.761262582423300e-1f));
  t = _mm512_fmadd_ps(t, z, _mm512_set1_ps(1.128379165726710e+0f));
  const __m512 small = _mm512_mul_ps(ax, t);
  // erfc(x) = exp(-x^2) / x * P(1/x^2) (Cephes erfcf), two ranges.
  const __m512 q = _mm512_div_ps(_mm512_set1_ps(1.0f), ax);
  const __m512 w = _mm512_mul_ps(q, q);
  __m512 pa = _mm512_set1_ps(2.326819970068386e-2f);
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(-1.387039388740657e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(3.687424674597105e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(-5.824733027278666e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(6.210004621745983e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(-4.944515323274145e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(3.404879937665872e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(-2.741127028184656e-1f));
  pa = _mm512_fmadd_ps(pa, w, _mm512_set1_ps(5.638259427386472e-1f));
  __m512 pb = _mm512_set1_ps(-1.047766399936249e+1f);
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(1.297719955372516e+1f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(-7.495518717768503e+0f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(2.921019019210786e+0f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(-1.015265279202700e+0f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(4.218463358204948e-1f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(-2.820767439740514e-1f));
  pb = _mm512_fmadd_ps(pb, w, _mm512_set1_ps(5.641895067754075e-1f));
  const __mmask16 use_a = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(2.0f), _CMP_LT_OQ);
  const __m512 poly = _mm512_mask_blend_ps(use_a, pb, pa);
  const __m512 erfc = _mm512_mul_ps(_mm512_mul_ps(exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), z)), q), poly);
  const __m512 large = _mm512_sub_ps(_mm512_set1_ps(1.0f), erfc);
  const __mmask16 use_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(1.0f), _CMP_LT_OQ);
  return or_ps(_mm512_mask_blend_ps(use_small, large, small), sign);
}

// The activation functions (engine/backend.h Activation) on 16 lanes.
inline __m512 activate(Activation act, __m512 x) {
  switch (act) {
    case Activation::GeluErf: {
      const __m512 e = erf_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
      return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    }
    case Activation::GeluTanh: {
      const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
      const __m512 inner = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
      return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), tanh_ps(inner)));
    }
    case Activation::Silu:
      return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    case Activation::Tanh: return tanh_ps(x);
    case Activation::Relu: return _mm512_max_ps(x, _mm512_setzero_ps());
  }
  return x;
}

}  // namespace
}  // namespace embed::cpu::avx512
