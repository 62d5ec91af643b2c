// The tensor-core matmul of the CUDA backend: cuBLAS GemmEx with f16 or bf16 inputs and f32
// accumulation and output. One instance per backend (its handle, stream and workspace); absent
// from the CPU emulator build, which has no cuBLAS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "engine/tensor.h"

namespace embed::cuda {

class CublasGemm {
 public:
  explicit CublasGemm(cudaStream_t stream);
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // y[m, n] = alpha * x[m, k] . w[n, k]^T + y  (row-major; alpha is a device pointer, written
  // by the activation conversion; x and w are both `type`, F16 or BF16).
  void run(DType type, const void* w, const void* x, float* y, int64_t m, int64_t n, int64_t k, const float* alpha,
           const float* one);

 private:
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
};

}  // namespace embed::cuda
