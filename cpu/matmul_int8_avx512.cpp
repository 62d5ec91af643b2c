// GEMM with 8-bit integer products on AVX-512 VNNI (vpdpbusd), compute type Int8 where AMX is
// absent: the same weights, activations, epilogue and task split as the AMX int8 GEMM
// (cpu/int8_blocks.h), so both give the same values; only the integer sums are computed here.
// Float weights (F32, F16, BF16) stay on the AVX-512 f32 path.
#include "cpu/int8_blocks.h"

namespace embed::cpu::avx512 {
namespace {

using int8::Int8Weight;
using int8::QuantizedActivations;

// A step's sums: per output row, 8 vpdpbusd over the weight tile's quad rows (16 columns x 4 k
// each). vpdpbusd multiplies unsigned by signed bytes, so the activations enter as qx + 128
// (qx xor 0x80) and 128 * (the column sums of the weights) is subtracted: exact in int32
// (|sum| < 8 * 4 * 255 * 128).
struct VnniSums {
  alignas(64) int32_t sums[kTileRows * kTileRows];
  void issue(const QuantizedActivations&, const Int8Weight&, int64_t, int64_t, int64_t) {}
  const int32_t* result(const QuantizedActivations& a, const Int8Weight& w, int64_t it, int64_t jt, int64_t s) {
    const int64_t kb = s / w.groups;
    const int g = static_cast<int>(s % w.groups);
    const auto* x = static_cast<const int8_t*>(a.tile(it, kb));
    const auto* q = static_cast<const int8_t*>(w.tile(jt, kb, g));
    const __m512i offset = _mm512_set1_epi32(static_cast<int>(0x80808080u));
    __m512i b[8];
    __m512i shift = _mm512_setzero_si512();
    for (int r = 0; r < 8; r++) {
      b[r] = _mm512_load_si512(q + r * 64);
      shift = _mm512_dpbusd_epi32(shift, offset, b[r]);
    }
    for (int row = 0; row < kTileRows; row++) {
      const int8_t* xr = x + row * int8::kBlock;
      __m512i acc = _mm512_setzero_si512();
      for (int r = 0; r < 8; r++) {
        int32_t quad;
        std::memcpy(&quad, xr + 4 * r, 4);
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(_mm512_set1_epi32(quad), offset), b[r]);
      }
      _mm512_store_si512(sums + row * kTileRows, _mm512_sub_epi32(acc, shift));
    }
    return sums;
  }
};

}  // namespace

std::unique_ptr<PackedWeight> pack_weight_int8(const Tensor& w) {
  if (gguf::integer_group(dtype_to_gguf(w.dtype)) != 0) return int8::pack_int8(w);
  return pack_weight(w);  // float weights as the avx512 level packs them
}

void matmul_int8(const MatmulArgs& a, ThreadPool& pool) {
  if (const auto* w = dynamic_cast<const Int8Weight*>(static_cast<const PackedWeight*>(a.w.packed)))
    return int8::matmul(a, *w, pool, [] { return VnniSums{}; });
  matmul(a, pool);
}

}  // namespace embed::cpu::avx512
