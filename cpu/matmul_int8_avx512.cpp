// GEMM with 8-bit integer products on AVX-512 VNNI (vpdpbusd), compute type Int8 where AMX is
// absent: the same weights, activations, epilogue and task split as the AMX int8 GEMM
// (cpu/int8_blocks.h), so both give the same values; only the integer sums are computed here.
// Float weights (F32, F16, BF16) stay on the AVX-512 f32 path.
#include "cpu/int8_blocks.h"

namespace embed::cpu::avx512 {
namespace {

using int8::Int8Weight;
using int8::QuantizedActivations;

// kCols output tiles side by side (16 rows x 16 kCols columns), in two halves of 8 rows. Per
// k-block (and group) each row's integer sums are, per column tile, a chain of 8 vpdpbusd over the
// weight tile's quad rows (16 columns x 4 k each; one broadcast of the row's 4 activations feeds
// every column tile), kept in a register and passed straight to the epilogue (output_tile's
// arithmetic, in the same order, so AMX and VNNI give the same bits). vpdpbusd multiplies
// unsigned by signed bytes: the activations were quantized as qx + 128 (quantize_activations'
// offset) and each chain starts at -128 * the column sums of the weights (Int8Weight::neg_shift,
// computed at load): exact in int32 (|sum| < 32 * 255 * 128).
template <bool kMin, int kCols>
void vnni_tiles(const QuantizedActivations& a, const Int8Weight& w, int64_t it, int64_t jt, const Output& out) {
  alignas(64) float c[kCols][kTileRows * kTileRows];
  const int64_t steps = w.k_blocks * w.groups;
  constexpr int kHalf = kTileRows / 2;
  for (int r0 = 0; r0 < kTileRows; r0 += kHalf) {
    if (it * kTileRows + r0 >= out.m) break;  // rows past the end are not stored
    __m512 acc[kCols][kHalf];
    for (auto& col : acc)
      for (__m512& v : col) v = _mm512_setzero_ps();
    const float* dx = a.dx.data() + (it * kTileRows + r0) * a.k_blocks;
    const float* qsum = kMin ? a.qsum.data() + (it * kTileRows + r0) * a.k_blocks * a.groups : nullptr;  // kMin only
    for (int64_t s = 0; s < steps; s++) {
      const int64_t kb = s / w.groups;
      const int g = static_cast<int>(s % w.groups);
      const auto* x = static_cast<const uint8_t*>(a.tile(it, kb)) + r0 * int8::kBlock;
      const int8_t* q[kCols];
      __m512i start[kCols];
      __m512 scale[kCols], min[kCols];
      for (int t = 0; t < kCols; t++) {
        q[t] = static_cast<const int8_t*>(w.tile(jt + t, kb, g));
        const size_t param = w.param(jt + t, kb, g);
        start[t] = _mm512_loadu_si512(w.neg_shift.data() + param);
        scale[t] = _mm512_loadu_ps(w.scale.data() + param);
        min[t] = kMin ? _mm512_loadu_ps(w.min.data() + param) : _mm512_setzero_ps();
      }
      for (int row = 0; row < kHalf; row++) {
        const uint8_t* xr = x + row * int8::kBlock;
        __m512i sum[kCols];
        for (int t = 0; t < kCols; t++) sum[t] = start[t];
        for (int r = 0; r < 8; r++) {
          int32_t quad;
          std::memcpy(&quad, xr + 4 * r, 4);
          const __m512i xq = _mm512_set1_epi32(quad);
          for (int t = 0; t < kCols; t++) sum[t] = _mm512_dpbusd_epi32(sum[t], xq, _mm512_load_si512(q[t] + r * 64));
        }
        const __m512 d = _mm512_set1_ps(dx[row * a.k_blocks + kb]);
        for (int t = 0; t < kCols; t++) {
          const __m512 v = _mm512_cvtepi32_ps(sum[t]);
          if constexpr (kMin) {
            const __m512 u = _mm512_fmsub_ps(scale[t], v, _mm512_mul_ps(min[t], _mm512_set1_ps(qsum[(row * a.k_blocks + kb) * a.groups + g])));
            acc[t][row] = _mm512_fmadd_ps(u, d, acc[t][row]);
          } else {
            acc[t][row] = _mm512_fmadd_ps(v, _mm512_mul_ps(scale[t], d), acc[t][row]);
          }
        }
      }
    }
    for (int t = 0; t < kCols; t++)
      for (int row = 0; row < kHalf; row++) _mm512_store_ps(c[t] + (r0 + row) * kTileRows, acc[t][row]);
  }
  for (int t = 0; t < kCols; t++) out.store(c[t], it, jt + t);
}

}  // namespace

std::unique_ptr<PackedWeight> pack_weight_int8(const Tensor& w) {
  if (gguf::integer_group(dtype_to_gguf(w.dtype)) == 0) return pack_weight(w);  // float weights as the avx512 level packs them
  std::unique_ptr<Int8Weight> p = int8::pack_int8(w);
  p->neg_shift.assign(p->scale.size(), 0);
  for (int64_t t = 0; t < p->n_tiles * p->k_blocks * p->groups; t++) {
    const auto* tile = reinterpret_cast<const int8_t*>(p->tiles.data()) + t * int8::kInt8TileBytes;
    for (int c = 0; c < kTileRows; c++) {
      int32_t sum = 0;
      for (int r = 0; r < 8; r++)
        for (int e = 0; e < 4; e++) sum += tile[r * 64 + c * 4 + e];
      p->neg_shift[static_cast<size_t>(t * kTileRows + c)] = -128 * sum;
    }
  }
  return p;
}

void matmul_int8(const MatmulArgs& a, ThreadPool& pool) {
  if (const auto* w = dynamic_cast<const Int8Weight*>(static_cast<const PackedWeight*>(a.w.packed)))
    return int8::matmul_tiles<2>(a, *w, pool, true, [] {
      return [](const QuantizedActivations& acts, const Int8Weight& wt, int64_t it, int64_t jt, int64_t columns, const Output& out) {
        if (columns == 2) {
          if (wt.has_min) vnni_tiles<true, 2>(acts, wt, it, jt, out);
          else vnni_tiles<false, 2>(acts, wt, it, jt, out);
        } else {
          if (wt.has_min) vnni_tiles<true, 1>(acts, wt, it, jt, out);
          else vnni_tiles<false, 1>(acts, wt, it, jt, out);
        }
      };
    });
  matmul(a, pool);
}

}  // namespace embed::cpu::avx512
