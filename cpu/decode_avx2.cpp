// Row-segment decoding to f32 for the gather and for packing matmul weights.
// F16/BF16 use F16C / integer shifts; quantized types use the gguf/ decoders on whole blocks.
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"
#include "gguf/quants.h"

namespace embed::cpu::avx2 {

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
      for (; i < n; i++) {
        const uint32_t b = static_cast<uint32_t>(h[i]) << 16;
        std::memcpy(out + i, &b, 4);
      }
      return;
    }
    default: {
      const int64_t be = dtype_block_elems(t);
      const auto* src = static_cast<const char*>(row) + dtype_row_bytes(t, k0 / be * be);
      gguf::dequantize_row(dtype_to_gguf(t), src, out, n);
      return;
    }
  }
}

}  // namespace embed::cpu::avx2
