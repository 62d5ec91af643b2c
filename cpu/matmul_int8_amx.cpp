// GEMM with 8-bit integer products on the AMX tiles (tdpbssd: int8 x int8 -> int32), compute type
// Int8, for block-quantized weights: the arithmetic llama.cpp's CPU backend uses for them. The
// weight and activation layouts, the epilogue and the task split are cpu/int8_blocks.h's; here
// only the tile products. Float weights (F32, F16, BF16) stay on the f32-grade split-bf16 path.
#include "cpu/amx_tile.h"
#include "cpu/int8_blocks.h"

namespace embed::cpu::amx {
namespace {

using int8::Int8Weight;
using int8::kInt8TileBytes;
using int8::QuantizedActivations;

// A step's sums by one tile product: tile C (0 or 1, alternating, so the next product runs while
// this one's sums are read) = A (tile 4) . B (tile 6), stored to sums[s % 2].
struct TileSums {
  alignas(64) int32_t sums[2][kTileRows * kTileRows];
  void issue(const QuantizedActivations& a, const Int8Weight& w, int64_t it, int64_t jt, int64_t s) {
    const int64_t kb = s / w.groups;
    const int g = static_cast<int>(s % w.groups);
    if (g == 0) _tile_loadd(4, a.tile(it, kb), int8::kBlock);
    _tile_loadd(6, w.tile(jt, kb, g), 64);
    if (s % 2 == 0) {
      _tile_zero(0);
      _tile_dpbssd(0, 4, 6);
      _tile_stored(0, sums[0], 64);
    } else {
      _tile_zero(1);
      _tile_dpbssd(1, 4, 6);
      _tile_stored(1, sums[1], 64);
    }
  }
  const int32_t* result(const QuantizedActivations&, const Int8Weight&, int64_t, int64_t, int64_t s) const { return sums[s % 2]; }
};

}  // namespace

std::unique_ptr<PackedWeight> pack_weight_int8(const Tensor& w) {
  if (gguf::integer_group(dtype_to_gguf(w.dtype)) == 0) return pack_weight_f32(w);  // float weights: f32-grade
  return int8::pack_int8(w);
}

void matmul_int8(const MatmulArgs& a, ThreadPool& pool) {
  if (const auto* w = dynamic_cast<const Int8Weight*>(static_cast<const PackedWeight*>(a.w.packed)))
    return int8::matmul(a, *w, pool, [] {
      configure_tiles(TileShapes::Int8Block32);
      return TileSums{};
    });
  matmul_f32(a, pool);
}

}  // namespace embed::cpu::amx
