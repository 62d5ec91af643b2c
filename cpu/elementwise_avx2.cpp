// Elementwise kernels with AVX2: activations (vector exp/tanh/erf from simd_avx2.h), gated
// units, add (with row broadcast), scale, and the row softmax. Threads split contiguous ranges.
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/ref/ref.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {
namespace {

constexpr int64_t kGrain = 4096;

// Applies f to 8-lane chunks of [0, n) and the scalar g to the tail.
template <class Vec, class Scalar>
void for_each_chunk(int64_t n, ThreadPool& pool, Vec f, Scalar g) {
  pool.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 8 <= e; i += 8) f(i);
    for (; i < e; i++) g(i);
  });
}

}  // namespace

void activation(const ActivationArgs& a, ThreadPool& pool) {
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  for_each_chunk(
      a.x.numel(), pool, [&](int64_t i) { _mm256_storeu_ps(y + i, activate(a.act, _mm256_loadu_ps(x + i))); },
      [&](int64_t i) {
        // Tail through the vector path too, so results do not depend on the position in the row.
        alignas(32) float buf[8] = {x[i]};
        _mm256_store_ps(buf, activate(a.act, _mm256_load_ps(buf)));
        y[i] = buf[0];
      });
}

void glu(const GluArgs& a, ThreadPool& pool) {
  const float* g = a.gate.ptr<const float>();
  const float* u = a.up.ptr<const float>();
  float* y = a.y.ptr<float>();
  for_each_chunk(
      a.gate.numel(), pool,
      [&](int64_t i) { _mm256_storeu_ps(y + i, _mm256_mul_ps(activate(a.act, _mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i))); },
      [&](int64_t i) {
        alignas(32) float buf[8] = {g[i]};
        _mm256_store_ps(buf, activate(a.act, _mm256_load_ps(buf)));
        y[i] = buf[0] * u[i];
      });
}

void add(const AddArgs& a, ThreadPool& pool) {
  const int64_t rows = a.a.rows, cols = a.a.cols;
  const float* pa = a.a.ptr<const float>();
  const float* pb = a.b.ptr<const float>();
  float* y = a.y.ptr<float>();
  if (a.b.rows == 1 && rows != 1) {
    pool.parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
          _mm256_storeu_ps(y + r * cols + c, _mm256_add_ps(_mm256_loadu_ps(pa + r * cols + c), _mm256_loadu_ps(pb + c)));
        for (; c < cols; c++) y[r * cols + c] = pa[r * cols + c] + pb[c];
      }
    });
    return;
  }
  for_each_chunk(
      a.a.numel(), pool, [&](int64_t i) { _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(pa + i), _mm256_loadu_ps(pb + i))); },
      [&](int64_t i) { y[i] = pa[i] + pb[i]; });
}

void scale(const ScaleArgs& a, ThreadPool& pool) {
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  const __m256 f = _mm256_set1_ps(a.factor);
  for_each_chunk(
      a.x.numel(), pool, [&](int64_t i) { _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), f)); },
      [&](int64_t i) { y[i] = x[i] * a.factor; });
}

void softmax(const SoftmaxArgs& a, ThreadPool& pool) {
  const int64_t cols = a.x.cols;
  pool.parallel_for(a.x.rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* x = a.x.ptr<const float>() + r * cols;
      float* y = a.y.ptr<float>() + r * cols;
      float mx = x[0];
      for (int64_t c = 1; c < cols; c++) mx = std::max(mx, x[c]);
      double sum = 0;
      for (int64_t c = 0; c < cols; c++) {
        y[c] = std::exp(x[c] - mx);
        sum += y[c];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < cols; c++) y[c] *= inv;
    }
  });
}

}  // namespace embed::cpu::avx2
