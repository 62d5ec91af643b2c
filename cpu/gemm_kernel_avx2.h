// The AVX2/FMA register-tile GEMM micro-kernel shared by the matmul and the attention:
// c[MR rows][16] += a[MR rows][0, kc) . b[0, kc)[16], a rows `lda` floats apart, b rows `ldb`
// elements apart (16 for packed weight panels, the key/value row stride in the attention), f32
// accumulation in 12 registers (6x16 tile). Each c element is accumulated over k in the same
// order whatever MR is, so results do not depend on how rows are grouped.
// Include only from files compiled with -mavx2 -mfma -mf16c.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {
// Internal linkage on purpose: these inline functions are compiled with different ISA flags in
// different files (AVX2, AVX-512); external linkage would let the linker keep one copy for all,
// which could put AVX-512 instructions on the AVX2 path.
namespace {

constexpr int kMR = 6;
constexpr int kNR = 16;

// B loaders: 16 consecutive values of row p of b as two f32 vectors.
struct LoadF32 {
  static void load(const void* b, int64_t off, __m256& b0, __m256& b1) {
    const float* f = static_cast<const float*>(b) + off;
    b0 = _mm256_loadu_ps(f);
    b1 = _mm256_loadu_ps(f + 8);
  }
};
struct LoadF16 {
  static void load(const void* b, int64_t off, __m256& b0, __m256& b1) {
    const uint16_t* h = static_cast<const uint16_t*>(b) + off;
    b0 = load_f16x8(h);
    b1 = load_f16x8(h + 8);
  }
};
struct LoadBF16 {
  static void load(const void* b, int64_t off, __m256& b0, __m256& b1) {
    const uint16_t* h = static_cast<const uint16_t*>(b) + off;
    b0 = load_bf16x8(h);
    b1 = load_bf16x8(h + 8);
  }
};

// Accumulators are named variables, not arrays: GCC keeps arrays of __m256 on the stack when a
// later loop indexes them, which costs a store per FMA.
template <int MR, class Load>
inline void micro_kernel(int64_t kc, const float* a, int64_t lda, const void* b, int64_t ldb, float* c, int64_t ldc,
                         int n_valid) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  const float* a4 = a + 4 * lda;
  const float* a5 = a + 5 * lda;
  for (int64_t p = 0; p < kc; p++) {
    __m256 b0, b1;
    Load::load(b, p * ldb, b0, b1);
#define EMBED_ROW(r)                                          \
  if constexpr (MR > r) {                                     \
    const __m256 ar = _mm256_broadcast_ss(a##r + p);          \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);               \
    c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);               \
  }
    EMBED_ROW(0) EMBED_ROW(1) EMBED_ROW(2) EMBED_ROW(3) EMBED_ROW(4) EMBED_ROW(5)
#undef EMBED_ROW
  }
  const __m256i m0 = tail_mask(std::min(n_valid, 8)), m1 = tail_mask(std::max(n_valid - 8, 0));
  auto store = [&](float* cr, __m256 lo, __m256 hi) {
    if (n_valid == kNR) {
      _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), lo));
      _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), hi));
    } else {
      _mm256_maskstore_ps(cr, m0, _mm256_add_ps(_mm256_maskload_ps(cr, m0), lo));
      _mm256_maskstore_ps(cr + 8, m1, _mm256_add_ps(_mm256_maskload_ps(cr + 8, m1), hi));
    }
  };
  store(c, c00, c01);
  if constexpr (MR > 1) store(c + ldc, c10, c11);
  if constexpr (MR > 2) store(c + 2 * ldc, c20, c21);
  if constexpr (MR > 3) store(c + 3 * ldc, c30, c31);
  if constexpr (MR > 4) store(c + 4 * ldc, c40, c41);
  if constexpr (MR > 5) store(c + 5 * ldc, c50, c51);
}

using KernelFn = void (*)(int64_t, const float*, int64_t, const void*, int64_t, float*, int64_t, int);
template <class Load>
constexpr KernelFn kKernels[kMR + 1] = {nullptr,
                                        micro_kernel<1, Load>, micro_kernel<2, Load>, micro_kernel<3, Load>,
                                        micro_kernel<4, Load>, micro_kernel<5, Load>, micro_kernel<6, Load>};

}  // namespace
}  // namespace embed::cpu::avx2
