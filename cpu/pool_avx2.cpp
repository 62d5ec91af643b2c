// Sequence pooling with AVX2: (weighted) mean, first or last token; threads split sequences.
#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"

#include <cstring>

namespace embed::cpu::avx2 {

void pool_rows(const PoolArgs& a, ThreadPool& pool) {
  const int64_t d = a.x.cols;
  const float* x = a.x.ptr<const float>();
  pool.parallel_for(a.n_seqs, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; s++) {
      const int begin = a.cu_seqlens_host[s], end = a.cu_seqlens_host[s + 1];
      float* y = a.y.ptr<float>() + s * d;
      if (a.kind != PoolKind::Mean) {
        const int t = a.kind == PoolKind::First ? begin : end - 1;
        std::memcpy(y, x + t * d, static_cast<size_t>(d) * sizeof(float));
        continue;
      }
      float wsum = 0;
      for (int t = begin; t < end; t++) wsum += a.token_weights ? a.token_weights[t] : 1.0f;
      const float inv = wsum > 0 ? 1.0f / wsum : 0.0f;
      int64_t i = 0;
      for (; i + 8 <= d; i += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int t = begin; t < end; t++) {
          const __m256 w = _mm256_set1_ps(a.token_weights ? a.token_weights[t] : 1.0f);
          acc = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + t * d + i), acc);
        }
        _mm256_storeu_ps(y + i, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
      }
      for (; i < d; i++) {
        float acc = 0;
        for (int t = begin; t < end; t++) acc += (a.token_weights ? a.token_weights[t] : 1.0f) * x[t * d + i];
        y[i] = acc * inv;
      }
    }
  });
}

}  // namespace embed::cpu::avx2
