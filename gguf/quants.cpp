// Scalar decoders for ggml block types. Compiled with -ffp-contract=off: results must equal
// gguf-py bit for bit, and the products are written in the same order as its numpy code.
// Blocks are read as bytes at the offsets of the quants.h layouts, never through a struct
// pointer, so the source may sit at any address (a file with a small alignment).
#include "gguf/quants.h"

#include <cstddef>
#include <cstring>
#include <vector>
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

// Q4_0, Q5_0: q - offset, scale d; low nibbles fill elements 0..15, high nibbles 16..31.
template <class Block, bool kHasHigh>
void integers_symmetric(const uint8_t* b, int64_t nb, int8_t* q, float* scale, float* min) {
  constexpr int kOffset = kHasHigh ? 16 : 8;
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block), q += kQK) {
    scale[i] = load_f16(b + offsetof(Block, d));
    min[i] = 0.0f;
    const uint8_t* qs = b + offsetof(Block, qs);
    for (int j = 0; j < kQK / 2; j++) {
      int lo = qs[j] & 0xF, hi = qs[j] >> 4;
      if constexpr (kHasHigh) {
        const uint8_t* qh = b + offsetof(Block, qh);
        lo |= q5_high(qh, j);
        hi |= q5_high(qh, j + kQK / 2);
      }
      q[j] = static_cast<int8_t>(lo - kOffset);
      q[j + kQK / 2] = static_cast<int8_t>(hi - kOffset);
    }
  }
}

// Q4_1, Q5_1: d * q + m, i.e. scale d, min -m.
template <class Block, bool kHasHigh>
void integers_affine(const uint8_t* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block), q += kQK) {
    scale[i] = load_f16(b + offsetof(Block, d));
    min[i] = -load_f16(b + offsetof(Block, m));
    const uint8_t* qs = b + offsetof(Block, qs);
    for (int j = 0; j < kQK / 2; j++) {
      int lo = qs[j] & 0xF, hi = qs[j] >> 4;
      if constexpr (kHasHigh) {
        const uint8_t* qh = b + offsetof(Block, qh);
        lo |= q5_high(qh, j);
        hi |= q5_high(qh, j + kQK / 2);
      }
      q[j] = static_cast<int8_t>(lo);
      q[j + kQK / 2] = static_cast<int8_t>(hi);
    }
  }
}

void integers_q8_0(const uint8_t* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(BlockQ8_0), q += kQK) {
    scale[i] = load_f16(b + offsetof(BlockQ8_0, d));
    min[i] = 0.0f;
    std::memcpy(q, b + offsetof(BlockQ8_0, qs), kQK);
  }
}

// Q4_K / Q5_K: 8 sub-blocks of 32 with scale d * sc and min dmin * m; sub-block 2c takes the low
// nibbles of qs[32c..32c+31], sub-block 2c+1 the high nibbles; Q5_K adds bit s of qh[l] as bit 4
// in sub-block s.
template <class Block, bool kHasHigh>
void integers_k4_k5(const uint8_t* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(Block)) {
    const float d = load_f16(b + offsetof(Block, d)), dmin = load_f16(b + offsetof(Block, dmin));
    const uint8_t* scales = b + offsetof(Block, scales);
    for (int s = 0; s < 8; s++, q += 32) {
      uint8_t sc, m;
      k_quant_scale_min(scales, s, &sc, &m);
      *scale++ = d * static_cast<float>(sc);
      *min++ = dmin * static_cast<float>(m);
      const uint8_t* qs = b + offsetof(Block, qs) + 32 * (s / 2);
      const int shift = (s & 1) ? 4 : 0;
      for (int l = 0; l < 32; l++) {
        int v = (qs[l] >> shift) & 0xF;
        if constexpr (kHasHigh) v |= ((b[offsetof(Block, qh) + l] >> s) & 1) << 4;
        q[l] = static_cast<int8_t>(v);
      }
    }
  }
}

// Q6_K: two halves of 128; in each, element 32c + l takes a nibble of ql and two bits of qh,
// less 32; every 16 elements share one int8 scale, times d.
void integers_q6_k(const uint8_t* b, int64_t nb, int8_t* q, float* scale, float* min) {
  for (int64_t i = 0; i < nb; i++, b += sizeof(BlockQ6_K), q += kQK_K) {
    const float d = load_f16(b + offsetof(BlockQ6_K, d));
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + offsetof(BlockQ6_K, scales));
    for (int g = 0; g < kQK_K / 16; g++) {
      *scale++ = d * static_cast<float>(sc[g]);
      *min++ = 0.0f;
    }
    for (int half = 0; half < 2; half++) {
      const uint8_t* ql = b + offsetof(BlockQ6_K, ql) + 64 * half;
      const uint8_t* qh = b + offsetof(BlockQ6_K, qh) + 32 * half;
      int8_t* qo = q + 128 * half;
      for (int l = 0; l < 32; l++) {
        qo[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        qo[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        qo[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        qo[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
  }
}

}  // namespace

int integer_group(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K: return 32;
    case TensorType::Q6_K: return 16;
    default: return 0;
  }
}

void integer_row(TensorType type, const void* src, int64_t n, int8_t* q, float* scale, float* min) {
  const auto traits = type_traits(static_cast<uint32_t>(type));
  EMBED_CHECK(traits && integer_group(type) > 0 && n >= 0 && n % traits->block_elems == 0, "integer_row: bad type or length");
  const int64_t nb = n / traits->block_elems;
  const auto* b = static_cast<const uint8_t*>(src);
  switch (type) {
    case TensorType::Q4_0: return integers_symmetric<BlockQ4_0, false>(b, nb, q, scale, min);
    case TensorType::Q4_1: return integers_affine<BlockQ4_1, false>(b, nb, q, scale, min);
    case TensorType::Q5_0: return integers_symmetric<BlockQ5_0, true>(b, nb, q, scale, min);
    case TensorType::Q5_1: return integers_affine<BlockQ5_1, true>(b, nb, q, scale, min);
    case TensorType::Q8_0: return integers_q8_0(b, nb, q, scale, min);
    case TensorType::Q4_K: return integers_k4_k5<BlockQ4_K, false>(b, nb, q, scale, min);
    case TensorType::Q5_K: return integers_k4_k5<BlockQ5_K, true>(b, nb, q, scale, min);
    case TensorType::Q6_K: return integers_q6_k(b, nb, q, scale, min);
    default: EMBED_CHECK(false, "integer_row: unreachable");
  }
}

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  const auto traits = type_traits(static_cast<uint32_t>(type));
  EMBED_CHECK(traits && n >= 0 && n % traits->block_elems == 0, "dequantize_row: bad length");
  const auto* b = static_cast<const uint8_t*>(src);
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; i++) dst[i] = load_f16(b + 2 * i);
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; i++) dst[i] = load_bf16(b + 2 * i);
      return;
    default:
      break;
  }
  const int group = integer_group(type);
  if (group == 0) fail(ErrorKind::Unsupported, std::string("no decoder for tensor type ") + type_name(type));
  // scale * q - min per element, two roundings (no FMA: this file has -ffp-contract=off), which is
  // what gguf-py's numpy arithmetic gives.
  std::vector<int8_t> q(static_cast<size_t>(n));
  std::vector<float> scale(static_cast<size_t>(n / group)), min(scale.size());
  integer_row(type, src, n, q.data(), scale.data(), min.data());
  for (int64_t i = 0; i < n; i++) dst[i] = scale[i / group] * static_cast<float>(q[i]) - min[i / group];
}

}  // namespace embed::gguf
