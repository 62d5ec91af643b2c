// Row-segment decoding to f32 for the gather and for packing matmul weights, with AVX2/F16C.
// Every quantized decoder computes exactly what the scalar gguf/quants.cpp decoder computes
// (same products in the same order, no fused multiply-add), so the result is bit-identical.
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"
#include "gguf/fp16.h"
#include "gguf/quants.h"

namespace embed::cpu::avx2 {
namespace {

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Stores 32 int8 values q (as two 16-byte halves) converted to float and multiplied by d.
inline void store_scaled(const __m128i lo, const __m128i hi, __m256 d, float* y) {
  y += 0;
  _mm256_storeu_ps(y, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
  _mm256_storeu_ps(y + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
  _mm256_storeu_ps(y + 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
  _mm256_storeu_ps(y + 24, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
}

// y = d * q - m for 32 unsigned values (K-quants): product and difference rounded separately.
inline void store_affine(const __m128i lo, const __m128i hi, __m256 d, __m256 m, float* y) {
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int i = 0; i < 4; i++)
    _mm256_storeu_ps(y + 8 * i, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[i]))), m));
}

void decode_q8_0(const uint8_t* b, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; i++, b += 34, y += 32) {
    const __m256 d = _mm256_set1_ps(load_f16(b));
    store_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)), _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)),
                 d, y);
  }
}

// Q4_0: element j = low nibble of qs[j] - 8, element j + 16 = high nibble - 8.
void decode_q4_0(const uint8_t* b, int64_t nb, float* y) {
  const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (int64_t i = 0; i < nb; i++, b += 18, y += 32) {
    const __m256 d = _mm256_set1_ps(load_f16(b));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    store_scaled(_mm_sub_epi8(_mm_and_si128(qs, mask), eight), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), mask), eight), d, y);
  }
}

// Bits [0, 16) (or [16, 32)) of the Q5 high-bit word as 0x10 / 0 bytes.
inline __m128i q5_high_bits(uint32_t qh, int half) {
  const __m128i bits = _mm_set1_epi16(static_cast<int16_t>(qh >> (16 * half)));
  // Byte j takes bit j: shuffle the two bytes of the 16 bits to positions 0-7 / 8-15, then test.
  const __m128i spread = _mm_shuffle_epi8(bits, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, sel), sel), _mm_set1_epi8(0x10));
}

void decode_q5_0(const uint8_t* b, int64_t nb, float* y) {
  const __m128i mask = _mm_set1_epi8(0x0F), sixteen = _mm_set1_epi8(16);
  for (int64_t i = 0; i < nb; i++, b += 22, y += 32) {
    const __m256 d = _mm256_set1_ps(load_f16(b));
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 6));
    const __m128i lo = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(qs, mask), q5_high_bits(qh, 0)), sixteen);
    const __m128i hi = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(qs, 4), mask), q5_high_bits(qh, 1)), sixteen);
    store_scaled(lo, hi, d, y);
  }
}

// Q4_K / Q5_K: 8 sub-blocks of 32 (see gguf/quants.cpp).
template <bool kHigh>
void decode_k4_k5(const uint8_t* b, int64_t nb, float* y) {
  const size_t block = kHigh ? 176 : 144;
  const __m128i mask = _mm_set1_epi8(0x0F);
  for (int64_t i = 0; i < nb; i++, b += block) {
    const float d = load_f16(b), dmin = load_f16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (kHigh ? 48 : 16);
    for (int s = 0; s < 8; s++, y += 32) {
      uint8_t sc, m;
      gguf::k_quant_scale_min(scales, s, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc)), m1 = _mm256_set1_ps(dmin * static_cast<float>(m));
      const uint8_t* q = qs + 32 * (s / 2);
      __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
      if (s & 1) {
        lo = _mm_srli_epi16(lo, 4);
        hi = _mm_srli_epi16(hi, 4);
      }
      lo = _mm_and_si128(lo, mask);
      hi = _mm_and_si128(hi, mask);
      if constexpr (kHigh) {  // bit s of qh[l] becomes bit 4
        const __m128i bit = _mm_set1_epi8(static_cast<char>(1 << s)), h16 = _mm_set1_epi8(0x10);
        const __m128i h0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh)), h1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 16));
        lo = _mm_or_si128(lo, _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h0, bit), bit), h16));
        hi = _mm_or_si128(hi, _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h1, bit), bit), h16));
      }
      store_affine(lo, hi, d1, m1, y);
    }
  }
}

// Q6_K: two halves of 128; four groups of 32 per half share ql/qh bytes (see gguf/quants.cpp).
void decode_q6_k(const uint8_t* b, int64_t nb, float* y) {
  const __m128i m4 = _mm_set1_epi8(0x0F), m2 = _mm_set1_epi8(0x03), off = _mm_set1_epi8(32);
  for (int64_t i = 0; i < nb; i++, b += 210) {
    const float d = load_f16(b + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    for (int half = 0; half < 2; half++) {
      const uint8_t* ql = b + 64 * half;
      const uint8_t* qh = b + 128 + 32 * half;
      const int8_t* sc = scales + 8 * half;
      float* yh = y + 128 * half;
      for (int g = 0; g < 4; g++) {  // groups: ql low (l), ql+32 low, ql high, ql+32 high
        const uint8_t* src = ql + ((g & 1) ? 32 : 0);
        for (int part = 0; part < 2; part++) {  // 16 elements, one scale each
          __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * part));
          q = (g >= 2) ? _mm_and_si128(_mm_srli_epi16(q, 4), m4) : _mm_and_si128(q, m4);
          const __m128i h = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 16 * part)), 2 * g), m2);
          q = _mm_sub_epi8(_mm_or_si128(q, _mm_slli_epi16(h, 4)), off);
          const __m256 ds = _mm256_set1_ps(d * static_cast<float>(sc[part + 2 * g]));
          float* out = yh + 32 * g + 16 * part;
          _mm256_storeu_ps(out, _mm256_mul_ps(ds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
          _mm256_storeu_ps(out + 8, _mm256_mul_ps(ds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)))));
        }
      }
    }
    y += 256;
  }
}

}  // namespace

void decode_row_segment(DType t, const void* row, int64_t k0, int64_t n, float* out) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, static_cast<const float*>(row) + k0, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(row) + k0;
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_f16x8(h + i));
      for (; i < n; i++) out[i] = _cvtsh_ss(h[i]);
      return;
    }
    case DType::BF16: {
      const uint16_t* h = static_cast<const uint16_t*>(row) + k0;
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bf16x8(h + i));
      for (; i < n; i++) out[i] = bf16_to_f32(h[i]);
      return;
    }
    default:
      break;
  }
  const int64_t be = dtype_block_elems(t);
  const auto* src = static_cast<const uint8_t*>(row) + dtype_row_bytes(t, k0 / be * be);
  const int64_t nb = n / be;
  switch (t) {
    case DType::Q8_0: return decode_q8_0(src, nb, out);
    case DType::Q4_0: return decode_q4_0(src, nb, out);
    case DType::Q5_0: return decode_q5_0(src, nb, out);
    case DType::Q4_K: return decode_k4_k5<false>(src, nb, out);
    case DType::Q5_K: return decode_k4_k5<true>(src, nb, out);
    case DType::Q6_K: return decode_q6_k(src, nb, out);
    default: return gguf::dequantize_row(dtype_to_gguf(t), src, out, n);  // Q4_1, Q5_1: scalar
  }
}

}  // namespace embed::cpu::avx2
