// What the AMX kernels share: the tile configuration (every tile 16 rows x 64 bytes), loading it
// once per thread, and the split of f32 values into bf16 parts. Include only from files compiled
// with the AMX flags (cpu/CMakeLists.txt).
//
// Split arithmetic: hi = bf16(x) (round to nearest even, 8 significant bits), lo = bf16(x - hi);
// x - hi is exact in f32, so |x - (hi + lo)| <= 2^-8 |x - hi| <= 2^-16 |x|. An f16 value (11
// significant bits) is exactly hi + lo. The tiles multiply bf16 pairs exactly and accumulate in
// f32, so hi*hi' + hi*lo' + lo*hi' is a product with relative error <= ~2^-15 (the dropped lo*lo'
// and the two splits), accumulated like an f32 GEMM. docs/kernels.md has the error analysis.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "cpu/tile_buffer.h"

namespace embed::cpu::amx {
// Which TileShapes this thread's tile unit holds (-1: none); one variable for every file that
// configures tiles (defined in cpu/isa.cpp).
extern thread_local int tile_shapes_loaded;

// Internal linkage on purpose (see simd_avx2.h): each including file compiles its own copy.
namespace {

using embed::cpu::CacheLineAllocator;
using embed::cpu::kTileRows;
using embed::cpu::TileBuffer;
constexpr int kTileK = 32;        // bf16 values per A-tile row (64 bytes)
constexpr int kTileElems = 512;   // 16-bit elements in one tile (1 KiB)

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The tile shapes of the AMX kernels. Bf16: every tile 16 rows x 64 bytes (A: 16 x 32 bf16,
// B: 16 pair rows x 16 columns, C: 16 x 16 f32). Int8Block32: C tiles 0-3 16 x 64 bytes, A tiles
// 4-5 16 rows x 32 int8 (one 32-block of k), B tiles 6-7 8 quad rows x 16 columns.
enum class TileShapes { Bf16, Int8Block32 };

// Loads `shapes` into this thread's tile unit unless it is the configuration loaded last.
// Linux keeps each thread's configuration across context switches.
inline void configure_tiles(TileShapes shapes = TileShapes::Bf16) {
  if (tile_shapes_loaded == static_cast<int>(shapes)) return;
  TileConfig c;
  for (int i = 0; i < 8; i++) {
    c.rows[i] = kTileRows;
    c.colsb[i] = 64;
  }
  if (shapes == TileShapes::Int8Block32) {
    c.colsb[4] = c.colsb[5] = 32;
    c.rows[6] = c.rows[7] = 8;
  }
  _tile_loadconfig(&c);
  tile_shapes_loaded = static_cast<int>(shapes);
}

inline __m512 bf16_lo_half_to_f32(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
inline __m512 bf16_hi_half_to_f32(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

// 32 floats -> 32 bf16 "hi" parts and 32 "lo" parts (the remainders), both in input order.
inline void split32(const float* x, uint16_t* hi, uint16_t* lo) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
  _mm512_storeu_si512(hi, h);
  // Back to f32: element i of h sits in the low half of 32-bit lane i/2 for even i.
  const __m512i h0 = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(h));
  const __m512i h1 = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1));
  const __m512 r0 = _mm512_sub_ps(x0, bf16_lo_half_to_f32(h0)), r1 = _mm512_sub_ps(x1, bf16_lo_half_to_f32(h1));
  _mm512_storeu_si512(lo, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r1, r0)));
}

// 32 floats -> hi and lo parts in registers (bf16 pairs as 16 32-bit units each).
inline void split32(const float* x, __m512i& hi, __m512i& lo) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  hi = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
  const __m512i h0 = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(hi));
  const __m512i h1 = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hi, 1));
  lo = reinterpret_cast<__m512i>(
      _mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, bf16_lo_half_to_f32(h1)), _mm512_sub_ps(x0, bf16_lo_half_to_f32(h0))));
}

// The all-ones masked forms of unpack and shuffle: the same instructions as the unmasked
// intrinsics, which GCC 12 expands with _mm512_undefined_epi32() and then reports as used
// uninitialized wherever they are inlined (-Wuninitialized false positive, GCC bug 105593, fixed
// in GCC 13).
inline __m512i unpacklo32(__m512i a, __m512i b) { return _mm512_mask_unpacklo_epi32(a, 0xFFFF, a, b); }
inline __m512i unpackhi32(__m512i a, __m512i b) { return _mm512_mask_unpackhi_epi32(a, 0xFFFF, a, b); }
inline __m512i unpacklo64(__m512i a, __m512i b) { return _mm512_mask_unpacklo_epi64(a, 0xFF, a, b); }
inline __m512i unpackhi64(__m512i a, __m512i b) { return _mm512_mask_unpackhi_epi64(a, 0xFF, a, b); }
template <int kImm>
inline __m512i shuffle128(__m512i a, __m512i b) { return _mm512_mask_shuffle_i32x4(a, 0xFFFF, a, b, kImm); }

// In-register transpose of a 16 x 16 matrix of 32-bit elements (r[i] is row i).
inline void transpose16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = unpacklo32(r[i], r[i + 1]);
    t[i + 1] = unpackhi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = unpacklo64(t[i], t[i + 2]);
    r[i + 1] = unpackhi64(t[i], t[i + 2]);
    r[i + 2] = unpacklo64(t[i + 1], t[i + 3]);
    r[i + 3] = unpackhi64(t[i + 1], t[i + 3]);
  }
  // Now r[4b + j] holds, in each 128-bit lane L, row (4L'..) elements: finish with 128-bit shuffles.
  for (int i = 0; i < 4; i++) {
    t[i] = shuffle128<0x88>(r[i], r[i + 4]);
    t[i + 4] = shuffle128<0xDD>(r[i], r[i + 4]);
    t[i + 8] = shuffle128<0x88>(r[i + 8], r[i + 12]);
    t[i + 12] = shuffle128<0xDD>(r[i + 8], r[i + 12]);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = shuffle128<0x88>(t[i], t[i + 8]);
    r[i + 8] = shuffle128<0xDD>(t[i], t[i + 8]);
    r[i + 4] = shuffle128<0x88>(t[i + 4], t[i + 12]);
    r[i + 12] = shuffle128<0xDD>(t[i + 4], t[i + 12]);
  }
}

// One B tile from weight rows: `rows` (<= 16) rows of 32 floats, `ld` apart (rows past `rows`
// are zero) -> tile row r = the (k 2r, 2r+1) pairs of the 16 weight rows, in hi (and lo when
// lo != nullptr).
inline void pack_b_tile(const float* w, int64_t ld, int rows, uint16_t* hi, uint16_t* lo) {
  __m512i h[16], l[16];
  for (int c = 0; c < 16; c++) {
    if (c < rows) split32(w + c * ld, h[c], l[c]);
    else h[c] = l[c] = _mm512_setzero_si512();
  }
  transpose16x16(h);
  for (int r = 0; r < 16; r++) _mm512_storeu_si512(hi + r * 32, h[r]);
  if (!lo) return;
  transpose16x16(l);
  for (int r = 0; r < 16; r++) _mm512_storeu_si512(lo + r * 32, l[r]);
}

// 32 floats -> 32 bf16 values (one part).
inline void round32(const float* x, uint16_t* out) {
  _mm512_storeu_si512(out, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x))));
}

}  // namespace
}  // namespace embed::cpu::amx
