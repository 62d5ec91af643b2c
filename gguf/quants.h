// Block layouts of the quantized ggml types this engine reads, and scalar row decoding to f32.
// The layouts are the on-disk byte order (ggml-common.h); the scalar decoders are the reference
// for every fast path in cpu/ and cuda/ and are bit-exact with gguf-py's numpy dequantization
// (this file is compiled with -ffp-contract=off so the compiler cannot fuse d*q-m into an FMA).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"

namespace embed::gguf {

constexpr int kQK = 32;    // elements per block of the legacy quants
constexpr int kQK_K = 256; // elements per K-quant super-block

struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[kQK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[kQK_K / 2]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[kQK_K / 8]; uint8_t qs[kQK_K / 2]; };
struct BlockQ6_K { uint8_t ql[kQK_K / 2]; uint8_t qh[kQK_K / 4]; int8_t scales[kQK_K / 16]; uint16_t d; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
inline void k_quant_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Decodes n elements (a multiple of the type's block size) starting at a block boundary.
// Throws embed::Error(Unsupported) for a type without a decoder.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);

// The integer form of a quantized row, for integer dot products (and the one place that reads the
// blocks' bit layouts; dequantize_row is built on it): element i is
//   scale[i / group] * q[i] - min[i / group]
// with q the stored integer less its offset (Q4_0: -8..7, Q6_K: -32..31, ...), in the f32 rounding
// dequantize_row uses. group is 32, or 16 for Q6_K (its sub-block scales); 0 for a type that is
// not a block quantization (F32, F16, BF16).
int integer_group(TensorType type);
void integer_row(TensorType type, const void* src, int64_t n, int8_t* q, float* scale, float* min);

}  // namespace embed::gguf
