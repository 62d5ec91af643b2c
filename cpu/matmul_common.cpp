// The part of the GEMM shared by the AVX2 and AVX-512 files, compiled without ISA flags so one
// copy serves both paths.
#include "cpu/kernels.h"

namespace embed::cpu {

void init_matmul_output(const MatmulArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const int64_t n = a.w.rows;
  const float* bias = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  float* y = a.y.ptr<float>();
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = j0; j < j1; j++) y[i * n + j] = (a.accumulate ? y[i * n + j] : 0.0f) + (bias ? bias[j] : 0.0f);
}

}  // namespace embed::cpu
