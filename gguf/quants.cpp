// Scalar decoders for ggml block types. Compiled with -ffp-contract=off: results must equal
// gguf-py bit for bit, and the products are written in the same order as its numpy code.
#include "gguf/quants.h"

#include <cstring>
#include <string>

#include "engine/error.h"
#include "gguf/fp16.h"

namespace embed::gguf {
namespace {

void decode_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void decode_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
      y[j + kQK / 2] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

// Bit j of the 32-bit little-endian high-bit mask of a Q5 block, moved to bit 4.
inline int q5_high(const uint8_t* qh, int j) { return ((qh[j >> 3] >> (j & 7)) & 1) << 4; }

void decode_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = d * static_cast<float>(((b[i].qs[j] & 0xF) | q5_high(b[i].qh, j)) - 16);
      y[j + kQK / 2] = d * static_cast<float>(((b[i].qs[j] >> 4) | q5_high(b[i].qh, j + 16)) - 16);
    }
  }
}

void decode_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; j++) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) | q5_high(b[i].qh, j)) + m;
      y[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) | q5_high(b[i].qh, j + 16)) + m;
    }
  }
}

void decode_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; j++) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// Q4_K / Q5_K: 8 sub-blocks of 32; sub-block 2c takes the low nibbles of qs[32c..32c+31],
// sub-block 2c+1 the high nibbles; Q5_K adds bit s of qh[l] as bit 4 in sub-block s.
template <class Block, bool kHasHigh>
void decode_k4_k5(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int s = 0; s < 8; s++, y += 32) {
      uint8_t sc, m;
      k_quant_scale_min(b[i].scales, s, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      const uint8_t* q = b[i].qs + 32 * (s / 2);
      const int shift = (s & 1) ? 4 : 0;
      for (int l = 0; l < 32; l++) {
        int v = (q[l] >> shift) & 0xF;
        if constexpr (kHasHigh) v |= ((b[i].qh[l] >> s) & 1) << 4;
        y[l] = d1 * static_cast<float>(v) - m1;
      }
    }
  }
}

void decode_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int half = 0; half < 2; half++) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      float* yh = y + 128 * half;
      for (int l = 0; l < 32; l++) {
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        const int is = l / 16;
        yh[l] = (d * static_cast<float>(sc[is + 0])) * static_cast<float>(q1);
        yh[l + 32] = (d * static_cast<float>(sc[is + 2])) * static_cast<float>(q2);
        yh[l + 64] = (d * static_cast<float>(sc[is + 4])) * static_cast<float>(q3);
        yh[l + 96] = (d * static_cast<float>(sc[is + 6])) * static_cast<float>(q4);
      }
    }
    y += kQK_K;
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  const auto traits = type_traits(static_cast<uint32_t>(type));
  EMBED_CHECK(traits && n >= 0 && n % traits->block_elems == 0, "dequantize_row: bad length");
  const int64_t nb = n / traits->block_elems;
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case TensorType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case TensorType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case TensorType::Q4_0: decode_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb); return;
    case TensorType::Q4_1: decode_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb); return;
    case TensorType::Q5_0: decode_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb); return;
    case TensorType::Q5_1: decode_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb); return;
    case TensorType::Q8_0: decode_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb); return;
    case TensorType::Q4_K: decode_k4_k5<BlockQ4_K, false>(static_cast<const BlockQ4_K*>(src), dst, nb); return;
    case TensorType::Q5_K: decode_k4_k5<BlockQ5_K, true>(static_cast<const BlockQ5_K*>(src), dst, nb); return;
    case TensorType::Q6_K: decode_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb); return;
    default:
      fail(ErrorKind::Unsupported, std::string("no decoder for tensor type ") + type_name(type));
  }
}

}  // namespace embed::gguf
