// The epilogue shared by the tiled GEMMs (AMX bf16 and int8, AVX-512 VNNI int8): where a finished
// 16 x 16 block of f32 sums goes, with bias, activation and accumulation. Include only from files
// compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "cpu/tile_buffer.h"
#include "cpu/simd_avx512.h"
#include "engine/backend.h"

namespace embed::cpu {
// Internal linkage on purpose (see simd_avx2.h).
namespace {

// Where output tiles go: rows [0, m) and columns [0, n) of y (row stride ld) receive
// (accumulate ? y : 0) + act(bias + the tile's sums), act being the identity without an activation.
struct Output {
  float* y;
  int64_t m, n, ld;
  const float* bias;  // indexed like y's columns, or nullptr
  bool accumulate;
  std::optional<Activation> act;

  void store(const float* c, int64_t it, int64_t jt) const {
    const int64_t rows = std::min<int64_t>(kTileRows, m - it * kTileRows), cols = std::min<int64_t>(kTileRows, n - jt * kTileRows);
    const __mmask16 mask = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1u);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + jt * kTileRows) : _mm512_setzero_ps();
    float* dst = y + it * kTileRows * ld + jt * kTileRows;
    for (int64_t r = 0; r < rows; r++) {
      __m512 v = _mm512_add_ps(b, _mm512_load_ps(c + r * kTileRows));
      if (act) v = avx512::activate(*act, v);  // the activation op's function: fused and separate agree
      if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst + r * ld), v);
      _mm512_mask_storeu_ps(dst + r * ld, mask, v);
    }
  }
};

}  // namespace
}  // namespace embed::cpu
