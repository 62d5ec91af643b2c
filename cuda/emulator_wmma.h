// CPU emulation of the WMMA subset cuda/ uses (16x16x16 f16 tiles, f32 accumulators), for the
// CUDA emulator (cuda/emulator.h). Fragments are opaque in the real API, so the emulator keeps a
// fragment's data in lane 0 only: lane 0 loads, multiplies and stores whole tiles, the other
// lanes just take part in the warp barrier each collective operation implies. Kernels must never
// read fragment elements (they would not compile here). The API's alignment rules are checked:
// 256-bit aligned pointers, leading dimensions a multiple of 16 bytes.
#pragma once

#include <cstdint>

#include "cuda/emulator.h"
#include "base/error.h"
#include "gguf/fp16.h"

namespace embed::cuda::emu {

struct Half {
  uint16_t bits;
};

namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator has 16x16x16 tiles only");
  float v[16][16];  // meaningful in lane 0 only
};

inline void check_pointer(const void* p, unsigned ldm, unsigned elem_bytes) {
  EMBED_CHECK(reinterpret_cast<uintptr_t>(p) % 32 == 0, "wmma: the matrix pointer must be 256-bit aligned");
  EMBED_CHECK((ldm * elem_bytes) % 16 == 0, "wmma: ldm must be a multiple of 16 bytes");
}

template <class Use, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, Half, Layout>& f, const Half* p, unsigned ldm) {
  check_pointer(p, ldm, 2);
  if (lane_id() == 0)
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++)
        f.v[r][c] = f16_to_f32(std::is_same_v<Layout, row_major> ? p[r * ldm + c].bits : p[c * ldm + r].bits);
  sync_warp();
}

inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float value) {
  for (auto& row : f.v)
    for (float& x : row) x = value;
}

// d = a . b + c, products exact (two f16 values), sums in f32 in k order.
template <class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, Half, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, Half, LayoutB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  if (lane_id() == 0) {
    fragment<accumulator, 16, 16, 16, float> out;
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) {
        float s = c.v[i][j];
        for (int k = 0; k < 16; k++) s += a.v[i][k] * b.v[k][j];
        out.v[i][j] = s;
      }
    d = out;
  }
  sync_warp();
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t layout) {
  check_pointer(p, ldm, 4);
  EMBED_CHECK(layout == mem_row_major, "the emulator stores accumulators row-major only");
  if (lane_id() == 0)
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++) p[r * ldm + c] = f.v[r][c];
  sync_warp();
}

}  // namespace wmma
}  // namespace embed::cuda::emu
