// The AVX-512 version of the register-tile GEMM micro-kernel (gemm_kernel_avx2.h): a 6 x 32 tile
// in 12 zmm accumulators; b given as two 16-wide halves (b0: columns 0-15, b1: 16-31, rows `ldb`
// elements apart). Each c element is accumulated over k in the same order as the AVX2 kernel, so
// both ISAs give bit-identical results. Include only from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace embed::cpu::avx512 {
// Internal linkage on purpose (see simd_avx2.h).
namespace {

constexpr int kMR = 6;
constexpr int kNR = 32;

struct LoadF32 {
  static __m512 load(const void* b, int64_t off) { return _mm512_loadu_ps(static_cast<const float*>(b) + off); }
};
struct LoadF16 {
  static __m512 load(const void* b, int64_t off) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(b) + off)));
  }
};
struct LoadBF16 {
  static __m512 load(const void* b, int64_t off) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(b) + off)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
};

inline __mmask16 lanes(int n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

template <int MR, class Load>
inline void micro_kernel(int64_t kc, const float* a, int64_t lda, const void* b0, const void* b1, int64_t ldb, float* c,
                         int64_t ldc, int n_valid) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  const float* a4 = a + 4 * lda;
  const float* a5 = a + 5 * lda;
  for (int64_t p = 0; p < kc; p++) {
    const __m512 x0 = Load::load(b0, p * ldb), x1 = Load::load(b1, p * ldb);
#define EMBED_ROW(r)                                  \
  if constexpr (MR > r) {                             \
    const __m512 ar = _mm512_set1_ps(a##r[p]);        \
    c##r##0 = _mm512_fmadd_ps(ar, x0, c##r##0);       \
    c##r##1 = _mm512_fmadd_ps(ar, x1, c##r##1);       \
  }
    EMBED_ROW(0) EMBED_ROW(1) EMBED_ROW(2) EMBED_ROW(3) EMBED_ROW(4) EMBED_ROW(5)
#undef EMBED_ROW
  }
  const __mmask16 m0 = lanes(n_valid), m1 = lanes(n_valid - 16);
  auto store = [&](float* cr, __m512 lo, __m512 hi) {
    _mm512_mask_storeu_ps(cr, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), lo));
    _mm512_mask_storeu_ps(cr + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), hi));
  };
  store(c, c00, c01);
  if constexpr (MR > 1) store(c + ldc, c10, c11);
  if constexpr (MR > 2) store(c + 2 * ldc, c20, c21);
  if constexpr (MR > 3) store(c + 3 * ldc, c30, c31);
  if constexpr (MR > 4) store(c + 4 * ldc, c40, c41);
  if constexpr (MR > 5) store(c + 5 * ldc, c50, c51);
}

using KernelFn = void (*)(int64_t, const float*, int64_t, const void*, const void*, int64_t, float*, int64_t, int);
template <class Load>
constexpr KernelFn kKernels[kMR + 1] = {nullptr,
                                        micro_kernel<1, Load>, micro_kernel<2, Load>, micro_kernel<3, Load>,
                                        micro_kernel<4, Load>, micro_kernel<5, Load>, micro_kernel<6, Load>};

}  // namespace
}  // namespace embed::cpu::avx512
