// The fused epilogue of the AVX-512 register-tile GEMMs (f32 FMA: matmul_avx512.cpp; bf16 pairs
// on vdpbf16ps: matmul_bf16_avx512.cpp): how an MR x 32 tile of k-block sums reaches y. The first
// k-block starts from (accumulate ? y : 0) + bias in registers, later ones add to y, and the last
// applies the activation before the one store, so no pass over y initialises or activates it.
// Include only from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/simd_avx512.h"
#include "engine/backend.h"

namespace embed::cpu::avx512 {
// Internal linkage on purpose (see simd_avx2.h).
namespace {

inline __mmask16 tile_lanes(int n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

// What happens to a tile's sums when they are stored.
struct Epilogue {
  bool first = false;             // y = start + sums, start = (accumulate ? y : 0) + bias; else y += sums
  bool accumulate = false;        // with first: the starting value includes y
  const float* bias = nullptr;    // with first: the bias of the tile's first column, or null
  const Activation* act = nullptr;  // applied after the last k-block's sums, or null
};

// Rows [0, MR) x columns [0, n_valid) of c (ldc apart) get the sums acc[r][h] (h: columns
// 16h..16h+15, NH 16-wide halves) as `e` says.
template <int MR, int NH = 2>
inline void store_tile(const __m512 (&acc)[MR][NH], float* c, int64_t ldc, int n_valid, const Epilogue& e) {
  __mmask16 m[NH];
#pragma GCC unroll 4
  for (int h = 0; h < NH; h++) m[h] = tile_lanes(n_valid - 16 * h);
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int h = 0; h < NH; h++) {
      float* cr = c + r * ldc + 16 * h;
      __m512 start;
      if (e.first)  // as init_matmul_output: (accumulate ? y : 0) + (bias or 0)
        start = _mm512_add_ps(e.accumulate ? _mm512_maskz_loadu_ps(m[h], cr) : zero,
                              e.bias ? _mm512_maskz_loadu_ps(m[h], e.bias + 16 * h) : zero);
      else
        start = _mm512_maskz_loadu_ps(m[h], cr);
      __m512 v = _mm512_add_ps(start, acc[r][h]);
      if (e.act) v = activate(*e.act, v);
      _mm512_mask_storeu_ps(cr, m[h], v);
    }
}

}  // namespace
}  // namespace embed::cpu::avx512
