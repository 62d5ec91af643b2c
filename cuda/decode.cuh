// Device decoders: element i of one weight row of any GGUF type the engine reads, to f32,
// bit-exact with gguf/quants.cpp (each product and sum is written with __fmul_rn / __fadd_rn /
// __fsub_rn so that nvcc cannot fuse it into an FMA with a different rounding). Block layouts are
// gguf/quants.h's; blocks are 2-byte aligned, so their f16 scales are read as uint16_t.
#pragma once

#include "cuda/device.cuh"
#include "gguf/quants.h"

namespace embed::cuda {

template <class Block>
__device__ __forceinline__ const Block& block_of(const uint8_t* row, int64_t i, int64_t elems_per_block) {
  return reinterpret_cast<const Block*>(row)[i / elems_per_block];
}

struct DecodeF32 {
  __device__ static float at(const uint8_t* row, int64_t i) { return reinterpret_cast<const float*>(row)[i]; }
};
struct DecodeF16 {
  __device__ static float at(const uint8_t* row, int64_t i) { return half_to_float(reinterpret_cast<const uint16_t*>(row)[i]); }
};
struct DecodeBF16 {
  __device__ static float at(const uint8_t* row, int64_t i) { return bf16_to_float(reinterpret_cast<const uint16_t*>(row)[i]); }
};

// Legacy 32-element blocks: element j < 16 is the low nibble of qs[j], j >= 16 the high nibble
// of qs[j - 16]; Q5 types take bit j of the 32-bit qh mask as bit 4.
__device__ __forceinline__ int low_nibbles(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4); }
__device__ __forceinline__ int q5_high_bit(const uint8_t* qh, int j) { return ((qh[j >> 3] >> (j & 7)) & 1) << 4; }

struct DecodeQ4_0 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ4_0>(row, i, 32);
    const int j = static_cast<int>(i % 32);
    return __fmul_rn(half_to_float(b.d), static_cast<float>(low_nibbles(b.qs, j) - 8));
  }
};
struct DecodeQ4_1 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ4_1>(row, i, 32);
    const int j = static_cast<int>(i % 32);
    return __fadd_rn(__fmul_rn(half_to_float(b.d), static_cast<float>(low_nibbles(b.qs, j))), half_to_float(b.m));
  }
};
struct DecodeQ5_0 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ5_0>(row, i, 32);
    const int j = static_cast<int>(i % 32);
    return __fmul_rn(half_to_float(b.d), static_cast<float>((low_nibbles(b.qs, j) | q5_high_bit(b.qh, j)) - 16));
  }
};
struct DecodeQ5_1 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ5_1>(row, i, 32);
    const int j = static_cast<int>(i % 32);
    const float q = static_cast<float>(low_nibbles(b.qs, j) | q5_high_bit(b.qh, j));
    return __fadd_rn(__fmul_rn(half_to_float(b.d), q), half_to_float(b.m));
  }
};
struct DecodeQ8_0 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ8_0>(row, i, 32);
    return __fmul_rn(static_cast<float>(b.qs[i % 32]), half_to_float(b.d));
  }
};

// 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K super-block (gguf::k_quant_scale_min).
__device__ __forceinline__ void k_scale_min(const uint8_t* scales, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *m = scales[s + 4] & 63;
  } else {
    *sc = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
    *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// Q4_K / Q5_K: sub-block s of 32 takes the low (s even) or high (s odd) nibbles of qs[32*(s/2) + l].
template <class Block, bool kHasHigh>
struct DecodeK4K5 {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<Block>(row, i, 256);
    const int e = static_cast<int>(i % 256), s = e / 32, l = e % 32;
    int sc, m;
    k_scale_min(b.scales, s, &sc, &m);
    int q = (b.qs[32 * (s / 2) + l] >> ((s & 1) ? 4 : 0)) & 0xF;
    if constexpr (kHasHigh) q |= ((b.qh[l] >> s) & 1) << 4;
    const float d1 = __fmul_rn(half_to_float(b.d), static_cast<float>(sc));
    const float m1 = __fmul_rn(half_to_float(b.dmin), static_cast<float>(m));
    return __fsub_rn(__fmul_rn(d1, static_cast<float>(q)), m1);
  }
};
using DecodeQ4_K = DecodeK4K5<gguf::BlockQ4_K, false>;
using DecodeQ5_K = DecodeK4K5<gguf::BlockQ5_K, true>;

// Q6_K: two halves of 128; in a half, quarter c (0..3) of 32 takes the low (c < 2) or high nibble
// of ql[l + 32*(c&1)] and bits 2c..2c+1 of qh[l]; its scale is scales[l/16 + 2c].
struct DecodeQ6_K {
  __device__ static float at(const uint8_t* row, int64_t i) {
    const auto& b = block_of<gguf::BlockQ6_K>(row, i, 256);
    const int e = static_cast<int>(i % 256), half = e / 128, c = (e % 128) / 32, l = e % 32;
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    const int low = c < 2 ? (ql[l + 32 * (c & 1)] & 0xF) : (ql[l + 32 * (c & 1)] >> 4);
    const int q = (low | (((qh[l] >> (2 * c)) & 3) << 4)) - 32;
    const float scale = __fmul_rn(half_to_float(b.d), static_cast<float>(b.scales[8 * half + l / 16 + 2 * c]));
    return __fmul_rn(scale, static_cast<float>(q));
  }
};

}  // namespace embed::cuda
