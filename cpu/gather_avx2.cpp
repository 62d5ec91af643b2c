// Token gather: one table row per token decoded to f32 (f16/bf16 converted row by row, never
// the whole table), scaled and optionally accumulated. Threads split the tokens.
#include <vector>

#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {

void gather(const GatherArgs& a, ThreadPool& pool) {
  const int64_t d = a.table.cols;
  const size_t rb = a.table.row_bytes();
  pool.parallel_for(a.n_tokens, 16, [&](int64_t t0, int64_t t1) {
    std::vector<float> tmp(static_cast<size_t>(d));
    const __m256 s = _mm256_set1_ps(a.scale);
    for (int64_t t = t0; t < t1; t++) {
      const auto* row = static_cast<const char*>(a.table.data) + static_cast<size_t>(a.ids[t]) * rb;
      float* out = a.out.ptr<float>() + t * d;
      float* dst = a.accumulate || a.scale != 1.0f ? tmp.data() : out;
      decode_row_segment(a.table.dtype, row, 0, d, dst);
      if (dst == out) continue;
      int64_t i = 0;
      for (; i + 8 <= d; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(dst + i), s);
        if (a.accumulate) v = _mm256_add_ps(_mm256_loadu_ps(out + i), v);
        _mm256_storeu_ps(out + i, v);
      }
      for (; i < d; i++) out[i] = a.accumulate ? out[i] + a.scale * dst[i] : a.scale * dst[i];
    }
  });
}

}  // namespace embed::cpu::avx2
