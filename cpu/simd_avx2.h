// Inline AVX2 helpers shared by the *_avx2.cpp kernels. Include only from files compiled with
// -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/backend.h"

namespace embed::cpu::avx2 {
// Internal linkage on purpose: these inline functions are compiled with different ISA flags in
// different files (AVX2, AVX-512); external linkage would let the linker keep one copy for all,
// which could put AVX-512 instructions on the AVX2 path.
namespace {

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 sh = _mm_movehdup_ps(lo);
  lo = _mm_add_ps(lo, sh);
  sh = _mm_movehl_ps(sh, lo);
  return _mm_cvtss_f32(_mm_add_ss(lo, sh));
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline __m256 load_f16x8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

inline __m256 load_bf16x8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// Mask with the first n (0..8) lanes set, for tail loads and stores.
inline __m256i tail_mask(int n) {
  alignas(32) static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m + 8 - n));
}

// exp(x) for x in float range: Cody-Waite range reduction + degree-6 polynomial; about 1 ulp.
inline __m256 exp_ps(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-103.972084045410f);
  x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // Scale by 2^n in two steps so n down to -150 still yields subnormals instead of garbage.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// tanh(x) = sign(x) * (1 - 2 / (exp(2|x|) + 1)); for |x| < 0.625 a Taylor-free rational form
// loses accuracy, so small inputs use the odd polynomial below (error < 2 ulp).
inline __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 e = exp_ps(_mm256_mul_ps(ax, _mm256_set1_ps(2.0f)));
  const __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  // Small |x|: tanh x = x + x^3 * P(x^2), minimax coefficients (Cephes tanhf).
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), ax, ax);
  const __m256 use_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_or_ps(_mm256_blendv_ps(big, small, use_small), sign);
}

// erf(x): |x| < 1 uses an odd polynomial; larger uses 1 - exp(-x^2) * R(1/|x|) style
// fit (from Cephes erff/erfcf, single precision, max error ~2 ulp).
inline __m256 erf_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 ax = _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(10.0f));
  const __m256 z = _mm256_mul_ps(ax, ax);
  // erf(x) = x * T(x^2) for |x| < 1 (Cephes erff polynomial).
  __m256 t = _mm256_set1_ps(7.853861353153693e-5f);
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(-8.010193625184903e-4f));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(5.188327685732524e-3f));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(-2.685381193529856e-2f));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(1.128358514861418e-1f));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(-3.761262582423300e-1f));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(1.128379165726710e+0f));
  const __m256 small = _mm256_mul_ps(ax, t);
  // erfc(x) = exp(-x^2) / x * P(1/x^2) (Cephes erfcf), two ranges.
  const __m256 q = _mm256_div_ps(_mm256_set1_ps(1.0f), ax);
  const __m256 w = _mm256_mul_ps(q, q);
  __m256 pa = _mm256_set1_ps(2.326819970068386e-2f);
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(-1.387039388740657e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(3.687424674597105e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(-5.824733027278666e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(6.210004621745983e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(-4.944515323274145e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(3.404879937665872e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(-2.741127028184656e-1f));
  pa = _mm256_fmadd_ps(pa, w, _mm256_set1_ps(5.638259427386472e-1f));
  __m256 pb = _mm256_set1_ps(-1.047766399936249e+1f);
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(1.297719955372516e+1f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(-7.495518717768503e+0f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(2.921019019210786e+0f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(-1.015265279202700e+0f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(4.218463358204948e-1f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(-2.820767439740514e-1f));
  pb = _mm256_fmadd_ps(pb, w, _mm256_set1_ps(5.641895067754075e-1f));
  const __m256 use_a = _mm256_cmp_ps(ax, _mm256_set1_ps(2.0f), _CMP_LT_OQ);
  const __m256 poly = _mm256_blendv_ps(pb, pa, use_a);
  const __m256 erfc = _mm256_mul_ps(_mm256_mul_ps(exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), z)), q), poly);
  const __m256 large = _mm256_sub_ps(_mm256_set1_ps(1.0f), erfc);
  const __m256 use_small = _mm256_cmp_ps(ax, _mm256_set1_ps(1.0f), _CMP_LT_OQ);
  return _mm256_or_ps(_mm256_blendv_ps(large, small, use_small), sign);
}

// The activation functions (engine/backend.h Activation) on 8 lanes.
inline __m256 activate(Activation act, __m256 x) {
  switch (act) {
    case Activation::GeluErf: {
      const __m256 e = erf_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
      return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }
    case Activation::GeluTanh: {
      const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
      const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
      return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), tanh_ps(inner)));
    }
    case Activation::Silu:
      return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    case Activation::Tanh: return tanh_ps(x);
    case Activation::Relu: return _mm256_max_ps(x, _mm256_setzero_ps());
  }
  return x;
}

}  // namespace
}  // namespace embed::cpu::avx2
