// Activations and gated units on 16 lanes (simd_avx512.h), bit-identical to the AVX2 kernels
// (the same operations per lane) at twice the width; tails go through masked vector loads.
#include "cpu/kernels.h"
#include "cpu/simd_avx512.h"

namespace embed::cpu::avx512 {
namespace {

constexpr int64_t kGrain = 4096;

inline __mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }

}  // namespace

void activation(const ActivationArgs& a, ThreadPool& pool) {
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  pool.parallel_for(a.x.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += 16) {
      const __mmask16 m = first(e - i);
      _mm512_mask_storeu_ps(y + i, m, activate(a.act, _mm512_maskz_loadu_ps(m, x + i)));
    }
  });
}

void glu(const GluArgs& a, ThreadPool& pool) {
  const float* g = a.gate.ptr<const float>();
  const float* u = a.up.ptr<const float>();
  float* y = a.y.ptr<float>();
  pool.parallel_for(a.gate.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += 16) {
      const __mmask16 m = first(e - i);
      _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(activate(a.act, _mm512_maskz_loadu_ps(m, g + i)), _mm512_maskz_loadu_ps(m, u + i)));
    }
  });
}

}  // namespace embed::cpu::avx512
