// LayerNorm and RMSNorm over rows with AVX2 (two-pass mean/variance in f32, 8 lanes x 2 chains).
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {
namespace {

float row_sum(const float* x, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; i++) s += x[i];
  return s;
}

float row_sq_dev(const float* x, int64_t n, float mean) {
  const __m256 mu = _mm256_set1_ps(mean);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mu), d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mu);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; i++) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

}  // namespace

void layer_norm(const LayerNormArgs& a, ThreadPool& pool) {
  const int64_t cols = a.x.cols;
  const float* w = a.weight.ptr<const float>();
  const float* b = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  pool.parallel_for(a.x.rows, 32, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* x = a.x.ptr<const float>() + r * cols;
      float* y = a.y.ptr<float>() + r * cols;
      const float mean = row_sum(x, cols) / static_cast<float>(cols);
      const float var = row_sq_dev(x, cols, mean) / static_cast<float>(cols);
      const float inv = 1.0f / std::sqrt(var + a.eps);
      const __m256 mu = _mm256_set1_ps(mean), iv = _mm256_set1_ps(inv);
      int64_t i = 0;
      for (; i + 8 <= cols; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mu), iv), _mm256_loadu_ps(w + i));
        if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + i));
        _mm256_storeu_ps(y + i, v);
      }
      for (; i < cols; i++) y[i] = (x[i] - mean) * inv * w[i] + (b ? b[i] : 0.0f);
    }
  });
}

void rms_norm(const RmsNormArgs& a, ThreadPool& pool) {
  const int64_t cols = a.x.cols;
  const float* w = a.weight.ptr<const float>();
  pool.parallel_for(a.x.rows, 32, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* x = a.x.ptr<const float>() + r * cols;
      float* y = a.y.ptr<float>() + r * cols;
      const float ss = row_sq_dev(x, cols, 0.0f);
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(cols) + a.eps);
      const __m256 iv = _mm256_set1_ps(inv);
      int64_t i = 0;
      for (; i + 8 <= cols; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), iv), _mm256_loadu_ps(w + i)));
      for (; i < cols; i++) y[i] = x[i] * inv * w[i];
    }
  });
}

}  // namespace embed::cpu::avx2
