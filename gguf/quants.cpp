// Scalar decoders for ggml block types. Compiled with -ffp-contract=off: results must equal
// gguf-py bit for bit, and the products are written in the same order as its numpy code.
// Blocks are read as bytes at the offsets of the quants.h layouts, never through a struct
// pointer, so the source may sit at any address (a file with a small alignment).
#include "gguf/quants.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "base/error.h"
#include "gguf/fp16.h"

namespace embed::gguf {
namespace {

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

inline float load_bf16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return bf16_to_f32(h);
}

// Bit j of the 32-bit little-endian high-bit mask of a Q5 block, moved to bit 4.
inline int q5_high(const uint8_t* qh, int j) { return ((qh[j >> 3] >> (j & 7)) & 1) << 4; }

// Q4_0, Q5_0: y = d * (q - offset); low nibbles fill elements 0..15, high nibbles 16..31.
template <class Block, bool kHasHigh>
void decode_symmetric(const uint8_t* b, float* y, int64_t nb) {
  constexpr int kOffset = kHasHigh ? 16 : 8;
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block), y += kQK) {
    const float d = load_f16(b + offsetof(Block, d));
    const uint8_t* qs = b + offsetof(Block, qs);
    for (int j = 0; j < kQK / 2; j++) {
      int lo = qs[j] & 0xF, hi = qs[j] >> 4;
      if constexpr (kHasHigh) {
        const uint8_t* qh = b + offsetof(Block, qh);
        lo |= q5_high(qh, j);
        hi |= q5_high(qh, j + kQK / 2);
      }
      y[j] = d * static_cast<float>(lo - kOffset);
      y[j + kQK / 2] = d * static_cast<float>(hi - kOffset);
    }
  }
}

// Q4_1, Q5_1: y = d * q + m (two roundings, as numpy does them).
template <class Block, bool kHasHigh>
void decode_affine(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block), y += kQK) {
    const float d = load_f16(b + offsetof(Block, d)), m = load_f16(b + offsetof(Block, m));
    const uint8_t* qs = b + offsetof(Block, qs);
    for (int j = 0; j < kQK / 2; j++) {
      int lo = qs[j] & 0xF, hi = qs[j] >> 4;
      if constexpr (kHasHigh) {
        const uint8_t* qh = b + offsetof(Block, qh);
        lo |= q5_high(qh, j);
        hi |= q5_high(qh, j + kQK / 2);
      }
      y[j] = d * static_cast<float>(lo) + m;
      y[j + kQK / 2] = d * static_cast<float>(hi) + m;
    }
  }
}

void decode_q8_0(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(BlockQ8_0), y += kQK) {
    const float d = load_f16(b + offsetof(BlockQ8_0, d));
    const uint8_t* qs = b + offsetof(BlockQ8_0, qs);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(static_cast<int8_t>(qs[j])) * d;
  }
}

// Q4_K / Q5_K: 8 sub-blocks of 32; sub-block 2c takes the low nibbles of qs[32c..32c+31],
// sub-block 2c+1 the high nibbles; Q5_K adds bit s of qh[l] as bit 4 in sub-block s.
template <class Block, bool kHasHigh>
void decode_k4_k5(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block)) {
    const float d = load_f16(b + offsetof(Block, d)), dmin = load_f16(b + offsetof(Block, dmin));
    const uint8_t* scales = b + offsetof(Block, scales);
    for (int s = 0; s < 8; s++, y += 32) {
      uint8_t sc, m;
      k_quant_scale_min(scales, s, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      const uint8_t* q = b + offsetof(Block, qs) + 32 * (s / 2);
      const int shift = (s & 1) ? 4 : 0;
      for (int l = 0; l < 32; l++) {
        int v = (q[l] >> shift) & 0xF;
        if constexpr (kHasHigh) v |= ((b[offsetof(Block, qh) + l] >> s) & 1) << 4;
        y[l] = d1 * static_cast<float>(v) - m1;
      }
    }
  }
}

// Q6_K: two halves of 128; in each, element 32c + l takes a nibble of ql and two bits of qh,
// and every 16 elements share one int8 scale. y = (d * scale) * (q - 32).
void decode_q6_k(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(BlockQ6_K), y += kQK_K) {
    const float d = load_f16(b + offsetof(BlockQ6_K, d));
    for (int half = 0; half < 2; half++) {
      const uint8_t* ql = b + offsetof(BlockQ6_K, ql) + 64 * half;
      const uint8_t* qh = b + offsetof(BlockQ6_K, qh) + 32 * half;
      const uint8_t* sc = b + offsetof(BlockQ6_K, scales) + 8 * half;
      float* yh = y + 128 * half;
      for (int l = 0; l < 32; l++) {
        const int q[4] = {
            ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32,
            ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32,
            ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
            ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32,
        };
        for (int c = 0; c < 4; c++) {
          const float scale = static_cast<float>(static_cast<int8_t>(sc[l / 16 + 2 * c]));
          yh[l + 32 * c] = (d * scale) * static_cast<float>(q[c]);
        }
      }
    }
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  const auto traits = type_traits(static_cast<uint32_t>(type));
  EMBED_CHECK(traits && n >= 0 && n % traits->block_elems == 0, "dequantize_row: bad length");
  const int64_t nb = n / traits->block_elems;
  const auto* b = static_cast<const uint8_t*>(src);
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; i++) dst[i] = load_f16(b + 2 * i);
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; i++) dst[i] = load_bf16(b + 2 * i);
      return;
    case TensorType::Q4_0: decode_symmetric<BlockQ4_0, false>(b, dst, nb); return;
    case TensorType::Q4_1: decode_affine<BlockQ4_1, false>(b, dst, nb); return;
    case TensorType::Q5_0: decode_symmetric<BlockQ5_0, true>(b, dst, nb); return;
    case TensorType::Q5_1: decode_affine<BlockQ5_1, true>(b, dst, nb); return;
    case TensorType::Q8_0: decode_q8_0(b, dst, nb); return;
    case TensorType::Q4_K: decode_k4_k5<BlockQ4_K, false>(b, dst, nb); return;
    case TensorType::Q5_K: decode_k4_k5<BlockQ5_K, true>(b, dst, nb); return;
    case TensorType::Q6_K: decode_q6_k(b, dst, nb); return;
    default:
      fail(ErrorKind::Unsupported, std::string("no decoder for tensor type ") + type_name(type));
  }
}

}  // namespace embed::gguf
